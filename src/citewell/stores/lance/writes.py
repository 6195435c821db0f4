"""Rows into a LanceDB chunk table: chunks as Arrow, and the write that adds them.

A merge by id looks every id up in the id index and scans the ``id`` column of every row no
index holds yet: at a million rows 0.17 s a batch of 8,192, 0.5 s with 120,000 rows not
yet indexed, and growing with them through a long import. Appending takes 0.05 s. So
chunks of files the table holds no row of are appended: a chunk id hashes its file id
(``ingest.chunk_rows``), so no other file's row can carry it. The store folds new rows
into the id indexes every ``FOLD_KEYS_AFTER_ROWS`` (``TableUpkeep.fold_keys``) so that
neither the merge nor the look-up of the files scans more than that.

A store that did not see its table empty (a second import into a big table, a process
started since) knows nothing of its files: once its look-ups have taken as long as one scan
of the table's file ids would, it scans them (``AbsentFiles.scan_due``), and its writes skip
the look-up again from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
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
    if absent.knows(before):  # a file noted may have no rows left: merged all the same
        stored = not absent.holds(before, files)
    else:
        stored = _any_stored(table, files, absent)
    if not stored:
        table.add(data)
    else:
        table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
            data
        )
    absent.appended(before, int(table.version), files)  # either way: these files' rows


def add_then(
    table: Any,
    data: pa.Table,
    file_ids: Sequence[str],
    absent: AbsentFiles,
    upkeep: Callable[[], None] | None = None,
) -> int:
    """``add_or_merge``, then the store's ``upkeep`` of its indexes (None: none due), in the
    same lock: the versions it makes move no row, so ``absent`` stays true across them.
    Returns the table's version."""
    add_or_merge(table, data, file_ids, absent)
    if upkeep is not None:
        return adding_no_files(table, absent, upkeep)
    return int(table.version)


def adding_no_files(table: Any, absent: AbsentFiles, write: Callable[[], object]) -> int:
    """``write``, which adds no file's rows (a delete, an update of rows' KBs, the indexes'
    upkeep), under the caller's write lock: what ``absent`` knows stays true across it.
    Returns the version it made."""
    table.checkout_latest()
    before = int(table.version)
    write()
    table.checkout_latest()
    after = int(table.version)
    absent.no_files_added(before, after)
    return after


def _any_stored(table: Any, files: set[str], absent: AbsentFiles) -> bool:
    """Whether the table holds a row of any of ``files``: known from its metadata when it is
    empty, from one scan of its file ids once look-ups have cost as much, else looked up."""
    rows, version = table.count_rows(), int(table.version)
    if not rows:  # the table's files are known from here
        absent.start(version)
        return False
    if absent.scan_due(rows) and absent.seed(version, stored_files(table)):
        return not absent.holds(version, files)
    began = time.perf_counter()
    listed = ", ".join(quote(f) for f in sorted(files))
    found = bool(listed) and int(table.count_rows(f"file_id IN ({listed})")) > 0
    absent.looked_up(time.perf_counter() - began)
    return found


def stored_files(table: Any) -> Iterator[str]:
    """The ids of the files the table holds rows of (some more than once), read from the
    ``file_id`` column alone: 0.85-1.05 s at ten million rows."""
    import pyarrow.compute as pc

    for batch in table.to_lance().to_batches(columns=["file_id"], batch_size=1 << 16):
        yield from pc.unique(batch.column(0)).to_pylist()


class AbsentFiles:
    """Which files a table has no row of, known without asking it: since it was seen empty
    or its file ids were scanned, every version of it is this store's write, and each one
    that added rows noted their files. A version this store did not make (another process's
    write, a training's commit) drops what was noted, and the table is asked again. An
    import into a new table so skips a look-up of each batch's 1,600 files: 50 ms at a
    million rows, 0.3-1.8 s past three million (journal, "Ten million chunks at once").

    Files are noted by ``hash()`` (66 bytes each, where an id string took 110): two ids of
    one hash only make a write merge by id where it could have appended."""

    MAX_FILES = 2_000_000  # ~130 MB; 20 million chunks at ten a file. Past it, asked
    # A scan of the file ids took 0.85-1.05 s at ten million rows, about two look-ups of an
    # import's batch there (journal, "A second import into ten million").
    SCAN_SECONDS_PER_ROW = 1e-7

    def __init__(self) -> None:
        self._version: int | None = None
        self._files: set[int] = set()
        self._looked_up = 0.0  # seconds of look-ups since the last scan

    def holds(self, version: int, files: set[str]) -> bool:
        """Whether the table at ``version`` has no row of ``files``, known here."""
        if version != self._version:
            self._forget()
            return False
        return self._files.isdisjoint(map(hash, files))

    def knows(self, version: int) -> bool:
        """Whether the files of the table at ``version`` are known here."""
        return version == self._version

    def start(self, version: int) -> None:
        self._version, self._files = version, set()

    def looked_up(self, seconds: float) -> None:
        self._looked_up += seconds

    def scan_due(self, rows: int) -> bool:
        """Whether the look-ups since the last scan took as long as a scan of ``rows`` rows'
        file ids: then scanning costs at most twice what looking up alone would have, and
        a long write's later batches are not looked up."""
        return self._looked_up >= rows * self.SCAN_SECONDS_PER_ROW

    def seed(self, version: int, file_ids: Iterable[str]) -> bool:
        """The table at ``version`` holds rows of ``file_ids`` and no others (a scan);
        returns whether they were noted (not past ``MAX_FILES``)."""
        self._looked_up, self._version, self._files = 0.0, None, set()
        noted = set()
        for file_id in file_ids:
            noted.add(hash(file_id))
            if len(noted) > self.MAX_FILES:
                return False
        self._version, self._files = version, noted
        return True

    def appended(self, before: int, after: int, files: set[str]) -> None:
        """This store added rows of ``files`` (and no others), making ``after`` from
        ``before``."""
        if before != self._version or len(self._files) + len(files) > self.MAX_FILES:
            self._forget()
            return
        self._version = after
        self._files.update(map(hash, files))

    def _forget(self) -> None:
        self._version, self._files = None, set()

    def no_files_added(self, before: int, after: int) -> None:
        """This store made ``after`` from ``before`` without adding any file's rows: its
        indexes' upkeep, a delete, an update of rows' KBs (files noted may have none left:
        a write of them merges by id, as it would have)."""
        if before == self._version:
            self._version = after
