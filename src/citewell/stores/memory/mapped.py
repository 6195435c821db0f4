"""A copy's files mapped for reads at random places.

Linux reads ahead around every page a mapping faults in, as much as the disk's readahead
(8 MB on the virtio disk these benchmarks ran on): eight results' rows of a mapped million-
chunk copy brought tens of megabytes of text in, and a few hundred searches had the whole
of its 0.8 GB of text and 0.4 GB of int8 codes resident in every process. Searches read a
copy at random rows, so its mappings say so (``MADV_RANDOM``): a fault reads its page.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from pyarrow import ipc


def _random_access_map(path: Path) -> mmap.mmap:
    with path.open("rb") as handle:
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    mapping.madvise(mmap.MADV_RANDOM)
    return mapping


def map_npy(path: Path) -> np.ndarray[Any, Any]:
    """An ``.npy`` file's array over a read-only mapping of it (``np.load``'s
    ``mmap_mode``, without the readahead)."""
    with path.open("rb") as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        offset = handle.tell()
    mapping = _random_access_map(path)
    if fortran:
        return np.ndarray(shape, dtype=dtype, buffer=mapping, offset=offset, order="F")
    return np.ndarray(shape, dtype=dtype, buffer=mapping, offset=offset)


def map_arrow(path: Path) -> pa.Table:
    """An Arrow IPC file's table, its buffers pointing into a mapping of the file."""
    source = pa.BufferReader(pa.py_buffer(_random_access_map(path)))
    return ipc.open_file(source).read_all()
