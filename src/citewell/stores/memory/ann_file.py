"""faiss's index of a shared copy written so that every process maps its codes.

faiss reads an IVF fast-scan index's codes into each process's own memory (its block
lists cannot be mapped): 1.04 GB a process at ten million chunks, 4.2 GB with
``--workers 4``, the most of what four workers held beyond the copy itself. faiss can
also keep inverted lists in a file it maps (``OnDiskInvertedLists``: a list's codes, then
its ids, at an offset), and its fast scan reads a list's codes through the same
interface. So the copy keeps the index's header (coarse centroids, product quantiser) in
``ann.faiss`` and its lists in ``ann_lists.bin``, the packed blocks of codes exactly as
faiss lays them out in memory; every process maps that file, and the page cache holds it
once. Searches return the same rows and scores as the index they were written from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from citewell.stores.memory.ann import _faiss

INDEX_FILE = "ann.faiss"
LISTS_FILE = "ann_lists.bin"
ALIGN = 64  # bytes: each list's codes start on a cache line (SIMD loads)


def write_index(index: Any, directory: Path) -> None:
    """``index`` (a filled IVF fast-scan index) as its header and its mapped lists. The
    index is spent: its lists in memory are replaced by the file's (not mapped here)."""
    faiss = _faiss()
    ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    lists = faiss.OnDiskOneListVector()
    with (directory / LISTS_FILE).open("wb") as out:
        for number in range(ivf.nlist):
            lists.push_back(_write_list(ivf, number, out))
        total = out.tell()
    mapped = faiss.OnDiskInvertedLists(ivf.nlist, ivf.code_size, str(directory / LISTS_FILE))
    mapped.lists.swap(lists)
    mapped.totsize = total
    ivf.replace_invlists(mapped, True)  # the lists in memory go: the index is written now
    mapped.thisown = False  # the index deletes it, not Python
    faiss.write_index(index, str(directory / INDEX_FILE))


def _write_list(ivf: Any, number: int, out: BinaryIO) -> Any:
    """One list: its packed codes (whole blocks, as faiss searches them), then its ids."""
    faiss = _faiss()
    out.write(b"\0" * (-out.tell() % ALIGN))
    entry = faiss.OnDiskOneList()
    size = int(ivf.invlists.list_size(number))
    packed = -(-size // ivf.bbs) * (ivf.bbs * ivf.M2 // 2)  # bytes of whole blocks
    capacity = max(size, -(-packed // ivf.code_size))  # the ids follow capacity codes
    entry.size, entry.capacity, entry.offset = size, capacity, out.tell()
    if size:
        region = np.zeros(capacity * ivf.code_size + capacity * 8, dtype=np.uint8)
        region[:packed] = faiss.rev_swig_ptr(ivf.invlists.get_codes(number), packed)
        ids = faiss.rev_swig_ptr(ivf.invlists.get_ids(number), size)
        start = capacity * ivf.code_size
        region[start : start + size * 8] = np.asarray(ids, dtype=np.int64).view(np.uint8)
        out.write(region.tobytes())
    return entry


def read_index(directory: Path) -> Any:
    """The index in ``directory`` with its lists mapped, read-only (None: none kept).
    A copy written before its lists were mapped is read into memory as it was."""
    faiss = _faiss()
    header = directory / INDEX_FILE
    if not header.exists():
        return None
    if not (directory / LISTS_FILE).exists():
        return faiss.read_index(str(header))
    index = faiss.read_index(str(header), faiss.IO_FLAG_SKIP_IVF_DATA)
    mapped = faiss.downcast_InvertedLists(faiss.extract_index_ivf(index).invlists)
    mapped.filename = str(directory / LISTS_FILE)  # written in the copy's building dir
    mapped.read_only = True
    mapped.prefetch_nthread = 0  # no threads started a search: the page cache has them
    mapped.do_mmap()
    return index
