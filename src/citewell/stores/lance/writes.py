"""Rows into a LanceDB chunk table: chunks as Arrow, and the write that adds them.

A merge by id looks every id up in the id index and scans the ``id`` column of every row no
index holds yet: at a million rows 0.17 s a batch of 8,192, 0.5 s with 120,000 rows not
yet indexed, and growing with them through a long import. Appending takes 0.05 s. So
chunks of files the table holds no row of are appended: a chunk id hashes its file id
(``ingest.chunk_rows``), so no other file's row can carry it. The store folds new rows
into the id indexes every ``FOLD_KEYS_AFTER_ROWS`` (``TableUpkeep.fold_keys``) so that
neither the merge nor the look-up of the files scans more than that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from citewell.errors import StoreError
from citewell.stores.columns import ChunkColumns
from citewell.stores.lance.tables import quote, schema
from citewell.types import StoredChunk

FOLD_KEYS_AFTER_ROWS = 65_536
ATTRIBUTES = {"idx": "index"}  # table column → ChunkColumns field, where they differ


def column_rows(columns: ChunkColumns, vectors: np.ndarray, dimension: int) -> pa.Table:
    """The rows as Arrow, one row an id (the last given, as upserting them one after
    another would leave it; an append would keep both). Built a column at a time, the
    vectors from one float32 matrix (a list a row cost ten times as much)."""
    if vectors.shape != (len(columns), dimension):
        raise StoreError(
            f"{len(columns)} chunks came with vectors of shape {vectors.shape}; this table "
            f"holds {dimension}-dimensional vectors, one a chunk."
        )
    wanted = schema(dimension)
    arrays = [
        pa.array(getattr(columns, ATTRIBUTES.get(f.name, f.name)), f.type)
        for f in wanted
        if f.name != "vector"
    ]
    flat = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)
    arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat), dimension))
    table = pa.Table.from_arrays(arrays, schema=wanted)
    last = {chunk_id: i for i, chunk_id in enumerate(columns.id)}
    return table if len(last) == len(columns) else table.take(sorted(last.values()))


def vector_matrix(chunks: Sequence[StoredChunk], dimension: int) -> np.ndarray:
    """The chunks' own vectors as one matrix, each checked to be there and of its length."""
    for chunk in chunks:
        if chunk.vector is None or len(chunk.vector) != dimension:
            raise StoreError(f"Chunk {chunk.id} has no {dimension}-dimensional vector.")
    return np.asarray([c.vector for c in chunks], dtype=np.float32).reshape(len(chunks), -1)


def add_or_merge(table: Any, data: pa.Table, file_ids: Sequence[str], absent: AbsentFiles) -> None:
    """Append the rows when none of their files has a row now, else merge them by id. The
    caller holds the table's write lock across processes (the change journal's), so no
    other write of these files falls between the look-up and the write."""
    table.checkout_latest()  # another process's write committed a moment ago counts
    files, before = set(file_ids), int(table.version)
    if absent.holds(before, files) or not _stored_rows(table, files, absent):
        table.add(data)
        absent.appended(before, int(table.version), files)
        return
    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)


def add_then(
    table: Any,
    data: pa.Table,
    file_ids: Sequence[str],
    absent: AbsentFiles,
    upkeep: Callable[[], None] | None = None,
) -> None:
    """``add_or_merge``, then the store's ``upkeep`` of its indexes (None: none due), in the
    same lock: the versions it makes move no row, so ``absent`` stays true across them."""
    add_or_merge(table, data, file_ids, absent)
    if upkeep is None:
        return
    before = int(table.version)
    upkeep()
    table.checkout_latest()
    absent.rows_unchanged(before, int(table.version))


def _stored_rows(table: Any, files: set[str], absent: AbsentFiles) -> int:
    if not table.count_rows():  # (from its metadata) the table's files are known from here
        absent.start(int(table.version))
        return 0
    listed = ", ".join(quote(f) for f in sorted(files))
    return int(table.count_rows(f"file_id IN ({listed})")) if listed else 0


class AbsentFiles:
    """Which files a table has no row of, known without asking it: since it was seen empty,
    every version of it is this store's append of the files noted, or its upkeep of the
    indexes (which moves no row). A write of any other kind, or another process's, makes a
    version not noted here: what was noted is dropped, and the table asked again. An import
    into a new table so skips a look-up of each batch's 1,600 files: 50 ms at a million
    rows, 1.0-1.8 s past three million (about 1 ms a file; journal, "Ten million chunks at
    once").

    Files are noted by ``hash()`` (66 bytes each, where an id string took 110): two ids of
    one hash only make a write ask the table."""

    MAX_FILES = 2_000_000  # ~130 MB; 20 million chunks at ten a file. Past it, asked

    def __init__(self) -> None:
        self._version: int | None = None
        self._files: set[int] = set()

    def holds(self, version: int, files: set[str]) -> bool:
        """Whether the table at ``version`` has no row of ``files``, known here."""
        if version != self._version:
            self._forget()
            return False
        return self._files.isdisjoint(map(hash, files))

    def start(self, version: int) -> None:
        self._version, self._files = version, set()

    def appended(self, before: int, after: int, files: set[str]) -> None:
        """This store appended rows of ``files``, making ``after`` from ``before``."""
        if before != self._version or len(self._files) + len(files) > self.MAX_FILES:
            self._forget()
            return
        self._version = after
        self._files.update(map(hash, files))

    def _forget(self) -> None:
        self._version, self._files = None, set()

    def rows_unchanged(self, before: int, after: int) -> None:
        """This store's upkeep made ``after`` from ``before`` without moving a row."""
        if before == self._version:
            self._version = after
