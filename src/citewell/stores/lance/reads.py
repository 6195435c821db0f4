"""Read helpers for a LanceDB chunk table: row addresses (large tables) and the snapshot
source (small ones).

Addresses are a cache of hints, never of answers: a row fetched by address is checked
against the id asked for (an address from before a compaction falls back to a lookup by id).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.journal import ChangeJournal
from citewell.stores.lance.tables import where_sql
from citewell.stores.memory.changes import MAX_CHANGED_ROWS
from citewell.stores.memory.snapshot import (
    SNAPSHOT_COLUMNS,
    TableChanges,
    TableScan,
    TableSnapshot,
)
from citewell.types import ChunkFilter

REMEMBERED_ROWS = 100_000  # addresses kept (about 10 MB); the oldest half goes when full


class RowAddresses:
    """Where the chunks that searches found sit in the table (Lance row addresses), so
    fetching the winners is a take by address: 3-4 ms for 8 rows at a million chunks,
    against 11 ms for ``id IN (...)`` through the id index."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._addresses: dict[str, int] = {}
        self._dataset: Any = None
        self._lock = threading.Lock()

    def remember(self, rows: Sequence[dict[str, Any]]) -> None:
        if len(self._addresses) > REMEMBERED_ROWS:
            with self._lock:
                keep = list(self._addresses.items())[REMEMBERED_ROWS // 2 :]
                self._addresses = dict(keep)
        for row in rows:
            self._addresses[row["id"]] = row["_rowid"]

    def forget(self) -> None:
        """After this process's own writes: addresses may have moved."""
        with self._lock:
            self._addresses = {}
            self._dataset = None

    def take(self, ids: Sequence[str], columns: list[str]) -> dict[str, dict[str, Any]]:
        """The rows of those ids whose address is known and still holds that id.

        The dataset handle is kept (a new one reads cold: 8 ms instead of 3 for 8 rows) and
        opened anew only when an address misses: a row written or moved after it was opened.
        """
        known = [(i, self._addresses[i]) for i in ids if i in self._addresses]
        if not known:
            return {}
        try:
            rows = self._handle()._take_rows([a for _, a in known], columns=columns).to_pylist()
        except Exception:  # noqa: BLE001 - a fragment this handle does not know
            rows = []
        except BaseException as error:
            # Lance panics (pyo3's PanicException, not an Exception) when such an address
            # comes first among known ones: an address that missed, not a failed search.
            if type(error).__name__ != "PanicException":
                raise
            rows = []
        found = {
            r["id"]: r for r, (wanted, _) in zip(rows, known, strict=False) if r["id"] == wanted
        }
        if len(found) < len(known):
            with self._lock:
                self._dataset = None
        return found

    def dataset(self) -> Any:
        """The table at its latest version, as a Lance dataset with small caches."""
        import lance

        return lance.dataset(
            self.uri, index_cache_size_bytes=1 << 20, metadata_cache_size_bytes=64 << 20
        )

    def _handle(self) -> Any:
        with self._lock:
            if self._dataset is None:
                # Takes by address need file metadata, no index: a small cache of its own.
                self._dataset = self.dataset()
            return self._dataset


class LanceSnapshotSource:
    """A LanceDB table as snapshot_keeper sees it (``SnapshotSource``)."""

    def __init__(
        self,
        table: Any,
        dimension: int,
        journal: ChangeJournal | None = None,
        open_latest: Callable[[], Any] | None = None,
    ) -> None:
        """``journal`` and ``open_latest`` (the table's latest version as a Lance
        dataset): what ``changes`` reads; without them the changes are never known."""
        self._table, self._dimension = table, dimension
        self._journal, self._open_latest = journal, open_latest

    def version(self) -> int:
        return int(self._table.version)

    def count_rows(self) -> int:
        return int(self._table.count_rows())

    def load(self, index: VectorIndexPolicy | None = None) -> TableSnapshot:
        version = self._table.version
        data = self._table.search().select(SNAPSHOT_COLUMNS).limit(None).to_arrow()
        return TableSnapshot.from_arrow(version, data, self._dimension, index)

    def saved(self, index: VectorIndexPolicy) -> TableSnapshot | None:  # noqa: ARG002
        return None  # copies are kept only as the machine's shared files (SharedCopies)

    def kept(self) -> bool:
        return False

    @contextlib.contextmanager
    def scan(self) -> Iterator[TableScan]:
        """The table's latest version, read in batches (a Lance dataset stays at the
        version it was opened at, however often it is read)."""
        dataset = self._open_latest() if self._open_latest else self._table.to_lance()

        def batches(columns: Sequence[str] | None) -> Iterator[pa.Table]:
            chosen = list(columns) if columns else SNAPSHOT_COLUMNS
            read = dataset.to_batches(columns=chosen, batch_size=SCAN_BATCH, scan_in_order=True)
            for batch in read:
                yield pa.Table.from_batches([batch])

        yield TableScan(int(dataset.version), int(dataset.count_rows()), batches)

    def changes(self, since: int) -> TableChanges | None:
        """The rows, as they are now, of the files the journal says were written after
        version ``since``."""
        if self._journal is None or self._open_latest is None:
            return None
        dataset, lines = self._journal.read(self._open_latest)
        files = self._journal.files_after(since, lines)
        if files is None or len(files) > MAX_CHANGED_ROWS:
            return None
        listed = sorted(files)
        parts = [
            dataset.to_table(
                columns=SNAPSHOT_COLUMNS,
                filter=where_sql(ChunkFilter(file_ids=tuple(listed[at : at + FILES_A_READ]))),
            )
            for at in range(0, len(listed), FILES_A_READ)
        ]
        data = pa.concat_tables(parts) if parts else _empty(dataset)
        rows = TableSnapshot.from_arrow(int(dataset.version), data, self._dimension)
        return TableChanges(frozenset(files), rows, int(dataset.count_rows()))


FILES_A_READ = 500  # files named in one filter (the SQL stays short)
SCAN_BATCH = 65_536  # rows read at a time while a copy is written


def _empty(dataset: Any) -> pa.Table:
    return dataset.to_table(columns=SNAPSHOT_COLUMNS, limit=0)


def scope_terms(table: Any, predicate: str | None) -> Any:
    """The terms column of the rows a filter keeps (for their BM25 statistics)."""
    query = table.search().select(["terms"])
    if predicate is not None:
        query = query.where(predicate, prefilter=True)
    return query.limit(None).to_arrow()["terms"]
