"""A big table's copy written to its files a batch at a time (decision 0034).

Made in memory and then written, a copy of a million chunks took 3.3 GB in the process
that made it, twice that at the peak; ten million would not fit a 24 GB machine. Here the
table is read in batches, twice (``TableScan``): the first pass writes the rows and the
vectors' int8 codes (and fine codes) straight to the files, and counts each term's documents;
the second reads the terms alone and puts each posting at its place in files sized from
those counts. What stays in memory is a few numbers a row (hashes of the ids and file ids,
lengths, KB memberships), the vocabulary and faiss's index, trained on a sample decoded
from the codes' files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from numpy.lib.format import open_memmap
from pyarrow import ipc

from citewell.errors import StoreError
from citewell.stores.background import stop_if_exiting
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.ann import training_rows, untrained_index
from citewell.stores.memory.ann_file import write_index
from citewell.stores.memory.bm25 import K1, B, batch_postings, tf_part
from citewell.stores.memory.keys import key_hashes, take_rows
from citewell.stores.memory.mapped import map_arrow
from citewell.stores.memory.snapshot import TableScan, kb_masks, kb_members
from citewell.stores.memory.vectors import column_matrix, decoded, fine_codes, int8_codes
from citewell.stores.rows import ROW_COLUMNS

FORMAT = 3  # 3: fine codes, no float32 rows; 2: int8 codes, narrow postings, hashed lookups
ADD_BATCH = 65_536  # rows added to faiss's index at a time
CHANGED = "The table changed while it was read for its copy; the copy is made again."


@dataclass
class FirstPass:
    """What the first pass keeps of each row, and each term's document count."""

    rows: int
    id_hashes: npt.NDArray[np.uint64]
    file_hashes: npt.NDArray[np.uint64]
    lengths: npt.NDArray[np.float64]
    vocabulary: dict[str, int] = field(default_factory=dict)
    df: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kb_members: dict[str, list[npt.NDArray[np.int32]]] = field(default_factory=dict)

    def count_terms(self, terms: npt.NDArray[np.int32]) -> None:
        counts = np.bincount(terms, minlength=len(self.vocabulary))
        if len(counts) > len(self.df):
            self.df = np.concatenate([self.df, np.zeros(len(counts) - len(self.df), np.int64)])
        self.df[: len(counts)] += counts


def write_scan(scan: TableScan, work: Path, index: VectorIndexPolicy) -> None:
    """The copy of the scanned table, as files in ``work`` (a directory made empty)."""
    first = _first_pass(scan, work)
    _write_postings(scan, work, first)
    _write_lookups(work, first)
    kbs = _write_kbs(work, first)
    _write_index(work, scan.rows, index)
    meta = {
        "format": FORMAT, "version": scan.version, "kbs": kbs, "documents": scan.rows,
        "k1": K1, "b": B, "ann": True,
    }  # fmt: skip
    (work / "meta.json").write_text(json.dumps(meta))


def _first_pass(scan: TableScan, work: Path) -> FirstPass:
    """Rows, vectors and codes written; hashes, lengths, memberships and df kept."""
    count = scan.rows
    if not count:
        raise StoreError("An empty table has no copy to write: add chunks first.")
    first = FirstPass(count, *_empty_row_arrays(count))
    files: dict[str, Any] = {}
    begin = 0
    with pa.OSFile(str(work / "rows.arrow"), "wb") as sink:
        writer: Any = None
        for batch in scan.batches(None):
            stop_if_exiting()  # a copy of millions of rows takes minutes
            size = batch.num_rows
            if begin + size > count:
                raise StoreError(CHANGED)
            rows = batch.select(ROW_COLUMNS)
            writer = writer or ipc.new_file(sink, rows.schema)
            writer.write_table(rows)
            _write_vectors(work, files, batch, begin, count)
            _keep_row_numbers(first, batch, begin)
            begin += size
        if writer is not None:
            writer.close()
    if begin != count:
        raise StoreError(CHANGED)
    for array in files.values():
        array.flush()
    return first


def _empty_row_arrays(count: int) -> tuple[Any, Any, Any]:
    return (
        np.zeros(count, dtype=np.uint64),
        np.zeros(count, dtype=np.uint64),
        np.zeros(count, dtype=np.float64),
    )


def _write_vectors(
    work: Path, files: dict[str, Any], batch: pa.Table, begin: int, count: int
) -> None:
    """The batch's int8 codes, fine codes and scales at its rows of the files."""
    if not batch.num_rows:
        return
    matrix = column_matrix(batch["vector"])
    dimension = matrix.shape[1]
    if not files:
        for name, dtype, shape in (
            ("codes", np.int8, (count, dimension)),
            ("fine", np.int8, (count, dimension)),
            ("scales", np.float32, (count,)),
        ):
            files[name] = open_memmap(work / f"{name}.npy", "w+", dtype, shape)
    codes, scales = int8_codes(matrix)
    end = begin + batch.num_rows
    files["codes"][begin:end], files["fine"][begin:end] = codes, fine_codes(matrix, codes, scales)
    files["scales"][begin:end] = scales


def _keep_row_numbers(first: FirstPass, batch: pa.Table, begin: int) -> None:
    end = begin + batch.num_rows
    first.id_hashes[begin:end] = key_hashes(batch["id"].to_pylist())
    first.file_hashes[begin:end] = key_hashes(batch["file_id"].to_pylist())
    found = batch_postings(batch["terms"], begin, first.vocabulary, first.lengths)
    if found is not None:
        first.count_terms(found[0])
    for kb, rows in kb_members(batch["kb_ids"]).items():
        first.kb_members.setdefault(kb, []).append(rows + begin)


def _write_postings(scan: TableScan, work: Path, first: FirstPass) -> None:
    """Each posting at its term's place: rows (int32), tf (uint8), impact (float16)."""
    total = int(first.df.sum())
    start = np.zeros(len(first.df) + 1, dtype=np.int64)
    np.cumsum(first.df, out=start[1:])
    np.save(work / "postings_start.npy", start)
    lengths = first.lengths.astype(np.float32)
    np.save(work / "postings_lengths.npy", lengths)
    average = max(float(first.lengths.mean()), 1.0) if first.rows else 1.0
    out = {
        name: open_memmap(work / f"postings_{name}.npy", "w+", dtype, (total,))
        for name, dtype in (("rows", np.int32), ("tf", np.uint8), ("impact", np.float16))
    }
    cursor, begin, known = start[:-1].copy(), 0, first.vocabulary
    terms_known = len(known)  # the same rows again: no new term (the dict is not copied)
    scratch = np.zeros(first.rows)  # lengths, counted again: the first pass's are kept
    for batch in scan.batches(["terms"]):
        stop_if_exiting()  # a copy of millions of rows takes minutes
        found = batch_postings(batch["terms"], begin, known, scratch)
        begin += batch.num_rows
        if found is None:
            continue
        if len(known) != terms_known:
            raise StoreError(CHANGED)
        order = np.argsort(found[0], kind="stable")  # by term; rows stay in order
        terms, rows, tf = (part[order] for part in found)
        places = _places(terms, cursor)
        out["rows"][places] = rows
        out["tf"][places] = np.minimum(tf, 255)
        out["impact"][places] = tf_part(tf, lengths[rows], average, K1, B)
    if begin != first.rows:
        raise StoreError(CHANGED)
    for array in out.values():
        array.flush()


def _places(terms: npt.NDArray[np.int32], cursor: npt.NDArray[np.int64]) -> Any:
    """Where each of a batch's postings (sorted by term) goes, moving each term's cursor
    past them."""
    counts = np.bincount(terms, minlength=len(cursor))
    first_of_term = np.searchsorted(terms, terms, side="left")
    places = cursor[terms] + (np.arange(len(terms)) - first_of_term)
    cursor += counts
    return places


def _write_lookups(work: Path, first: FirstPass) -> None:
    """Ids, files and terms: sorted hashes with their positions."""
    order = np.argsort(first.id_hashes, kind="stable")
    np.save(work / "ids_hashes.npy", first.id_hashes[order])
    np.save(work / "ids_positions.npy", order.astype(np.int32))
    unique, first_rows, numbers = np.unique(
        first.file_hashes, return_index=True, return_inverse=True
    )
    np.save(work / "file_numbers.npy", numbers.astype(np.int32))
    file_ids = map_arrow(work / "rows.arrow")["file_id"]
    names = take_rows(file_ids, first_rows)
    if not pc.all(pc.equal(file_ids, names.take(pa.array(numbers)))).as_py():
        # two file ids of one 64-bit hash (about 1 in 10^6 at ten million files): not
        # told apart by a file number, so no copy; searches read the store
        raise StoreError("Two file ids share a hash; the table is searched in the store.")
    _write_arrow(work / "files.arrow", pa.table({"file_id": names.combine_chunks()}))
    np.save(work / "files_hashes.npy", unique)
    np.save(work / "files_positions.npy", np.arange(len(unique), dtype=np.int32))
    terms = sorted(first.vocabulary, key=first.vocabulary.__getitem__)
    _write_arrow(work / "vocabulary.arrow", pa.table({"term": pa.array(terms, pa.string())}))
    hashes = key_hashes(terms)
    order = np.argsort(hashes, kind="stable")
    np.save(work / "terms_hashes.npy", hashes[order])
    np.save(work / "terms_positions.npy", order.astype(np.int32))


def _write_kbs(work: Path, first: FirstPass) -> list[str]:
    members = {kb: np.concatenate(parts) for kb, parts in first.kb_members.items()}
    kbs = list(members)
    for n, (_kb, rows) in enumerate(kb_masks(members, first.rows).items()):
        np.save(work / f"kb_{n}.npy", rows)
    return kbs


def _write_index(work: Path, count: int, policy: VectorIndexPolicy) -> None:
    """faiss's index trained on a sample of the written vectors, every row added in
    batches (none for a table too small: its searches are exact)."""
    codes = np.load(work / "codes.npy", mmap_mode="r")
    fine = np.load(work / "fine.npy", mmap_mode="r")
    scales = np.load(work / "scales.npy", mmap_mode="r")

    def rows(which: Any) -> npt.NDArray[np.float32]:
        return decoded(codes[which], fine[which], scales[which])

    index = untrained_index(count, codes.shape[1], policy)
    if index is not None:
        index.train(rows(training_rows(index, count)))
        for begin in range(0, count, ADD_BATCH):
            index.add(rows(slice(begin, begin + ADD_BATCH)))
        write_index(index, work)


def _write_arrow(path: Path, table: pa.Table) -> None:
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
