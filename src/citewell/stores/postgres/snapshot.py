"""A small PostgreSQL chunk table as an in-memory snapshot (``SnapshotSource``).

On SciFact (10,857 chunks) a hybrid search took twice the embedded store's time: the BM25
query ~20 ms against 0.5 ms from postings in memory, HNSW 6.5 ms against 1.3 for numpy.
So below ``vector_index_min_rows`` each process keeps the table in memory, as the embedded
store does. The statistics row carries a version that every write bumps in its own
transaction, and the snapshot is used only while the table's version is the one it was
loaded at. That version is read from the database when it may have moved: a trigger on
the statistics row notifies every process of each update (db/change_listener.py), so it
is read again after each write, by this process at once and by others when the
notification lands (milliseconds); and before every use while notifications are not
trusted (the listener is down, or not yet connected).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from citewell.db.change_listener import ChangeListener
from citewell.errors import StoreError
from citewell.stores.base import ReplicaState
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.changes import MAX_CHANGED_ROWS
from citewell.stores.memory.snapshot import (
    SNAPSHOT_COLUMNS,
    TableChanges,
    TableScan,
    TableSnapshot,
)
from citewell.stores.postgres.changes import ChangeLog

log = logging.getLogger(__name__)

LOAD_BATCH = 20_000  # rows turned into Arrow at a time while a snapshot is read
REPLICA_WAIT = 0.5  # seconds the replica may take to replay a write before the primary is read
REPLICA_RETRY = 60.0  # seconds before a replica that did not answer is asked again
_TYPES = {
    "kb_ids": pa.list_(pa.string()),
    "headings": pa.list_(pa.string()),
    "idx": pa.int32(),
    "start": pa.int64(),
    "end": pa.int64(),
    "page": pa.int32(),
}


def vectors_from_binary(values: list[bytes], dimension: int) -> np.ndarray:
    """pgvector's binary form (int16 dimension, int16 unused, big-endian float4s) as one
    float32 matrix: 0.14 s for 10,857 rows, where parsing the text form took 0.75 s."""
    if not values:
        return np.zeros((0, dimension), dtype=np.float32)
    width = 4 + 4 * dimension
    joined = b"".join(values)
    if len(joined) != width * len(values):
        raise StoreError(f"Stored vectors are not {dimension}-dimensional.")
    raw = np.frombuffer(joined, dtype=">f4").reshape(len(values), width // 4)
    return raw[:, 1:].astype(np.float32)


class PostgresSnapshotSource:
    def __init__(
        self,
        engine: Engine,
        table: str,
        stats: str,
        dimension: int,
        listener: ChangeListener | None = None,
        replica: Engine | None = None,
    ) -> None:
        """``replica``: a streaming replica the rows are read from when it has replayed the
        table's latest version (``database_read_url``)."""
        self.engine, self.table, self.stats, self.dimension = engine, table, stats, dimension
        self.replica = replica
        self._changes = ChangeLog(table)
        self._replica_down_at = float("-inf")
        # No BEGIN and ROLLBACK around the one statement (0.8 -> 0.5 ms a read, measured).
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._listener = listener
        self._known: tuple[int, int] | None = None  # (the table's number, version) read

    def version(self) -> int:
        """The table's version: read again only once its number moved (or is unknown)."""
        number = None if self._listener is None else self._listener.table_number(self.stats)
        known = self._known
        if number is not None and known is not None and known[0] == number:
            return known[1]
        with self._autocommit.connect() as db:  # after the number: a write in between
            version = int(db.execute(text(f"SELECT version FROM {self.stats}")).scalar_one())
        if number is not None:  # is read again when its notification moves the number
            self._known = (number, version)
        return version

    def count_rows(self) -> int:
        with self._autocommit.connect() as db:
            return int(db.execute(text(f"SELECT chunks FROM {self.stats}")).scalar_one())

    def load(self, index: VectorIndexPolicy | None = None) -> TableSnapshot:
        """The rows and the version they are at, read in one repeatable-read transaction
        (binary, so vectors come as bytes); ``index``: see TableSnapshot.from_arrow."""
        with self.repeatable() as db:
            version = int(db.execute(text(f"SELECT version FROM {self.stats}")).scalar_one())
            data = self.read(db, "", [])
        return TableSnapshot.from_arrow(version, data, self.dimension, index)

    def saved(self, index: VectorIndexPolicy) -> TableSnapshot | None:  # noqa: ARG002
        return None  # copies are kept only as the machine's shared files (SharedCopies)

    def kept(self) -> bool:
        return False

    @contextlib.contextmanager
    def scan(self) -> Iterator[TableScan]:
        """The table at one moment (a repeatable-read transaction), read in batches as
        often as asked, in the same order each time: one worker, from the table's start."""
        with self.repeatable() as db:
            db.execute(text("SET LOCAL synchronize_seqscans = off"))
            db.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))
            version = int(db.execute(text(f"SELECT version FROM {self.stats}")).scalar_one())
            rows = int(db.execute(text(f"SELECT count(*) FROM {self.table}")).scalar_one())
            yield TableScan(version, rows, partial(self._batches, db, "", []))

    def changes(self, since: int) -> TableChanges | None:
        """The rows, as they are now, of the files written after version ``since`` (the
        changes table), with the version and row count they stand at."""
        with self.repeatable() as db:
            version, chunks = db.execute(text(f"SELECT version, chunks FROM {self.stats}")).one()
            files = self._changes.files_after(db, since)
            if files is None or len(files) > MAX_CHANGED_ROWS:
                return None
            data = self.read(db, " WHERE file_id = ANY(%s)", [sorted(files)])
        rows = TableSnapshot.from_arrow(int(version), data, self.dimension)
        return TableChanges(frozenset(files), rows, int(chunks))

    @contextlib.contextmanager
    def repeatable(self) -> Iterator[Connection]:
        """A repeatable-read transaction (what it reads is of one moment) on the replica
        when it answers and has replayed the table's latest version, else the primary."""
        with (self._caught_up_replica() or self.engine).connect() as connection:
            db = connection.execution_options(isolation_level="REPEATABLE READ")
            with db.begin():
                yield db

    def replica_version(self) -> int | None:
        """The table's version as the replica has replayed it (None: it does not answer,
        or there is none)."""
        if self.replica is None:
            return None
        try:
            with self.replica.connect() as db:
                return int(db.execute(text(f"SELECT version FROM {self.stats}")).scalar_one())
        except SQLAlchemyError:
            log.debug("the replica did not answer", exc_info=True)
            return None

    def replica_state(self) -> ReplicaState | None:
        """Where the replica stands against the primary (None: there is none)."""
        if self.replica is None:
            return None
        return ReplicaState(self.version(), self.replica_version())

    def _caught_up_replica(self) -> Engine | None:
        """The replica, once it has replayed the version the primary is at (waiting up to
        ``REPLICA_WAIT`` s: notifications of a write come before its replay); None when
        there is none, it lags longer, or it does not answer (asked again a minute later)."""
        replica, now = self.replica, time.monotonic()
        if replica is None or now - self._replica_down_at < REPLICA_RETRY:
            return None
        wanted, deadline = self.version(), now + REPLICA_WAIT
        while (found := self.replica_version()) is not None:
            if found >= wanted:
                return replica
            if time.monotonic() > deadline:
                log.info("the replica is behind version %d: reading the primary", wanted)
                return None
            time.sleep(0.02)
        self._replica_down_at = time.monotonic()
        log.warning(
            "the replica (database_read_url) does not answer: reading the primary for a minute"
        )
        return None

    def read(self, db: Connection, where: str, params: list[Any]) -> pa.Table:
        """The snapshot's columns of the rows ``where`` keeps, read in batches: a million
        rows fetched at once were a few GB of Python tuples beside the copy being made."""
        parts = list(self._batches(db, where, params, None))
        return pa.concat_tables(parts) if parts else self._arrow([], SNAPSHOT_COLUMNS)

    def column_batches(self, db: Connection, columns: Sequence[str]) -> Iterator[pa.Table]:
        """``columns`` of every row, ``LOAD_BATCH`` rows at a time (``citewell check``'s
        exact pass)."""
        return self._batches(db, "", [], columns)

    def _batches(
        self, db: Connection, where: str, params: list[Any], columns: Sequence[str] | None
    ) -> Iterator[pa.Table]:
        """``columns`` (the snapshot's unless named) of the rows ``where`` keeps, through a
        server-side cursor, ``LOAD_BATCH`` rows at a time."""
        names = list(columns) if columns else SNAPSHOT_COLUMNS
        selected = ", ".join(f'"{c}"' for c in names)
        driver = db.connection.driver_connection
        assert driver is not None  # a checked-out connection always has its driver's
        with driver.cursor("citewell_copy", binary=True) as cursor:
            cursor.execute(f"SELECT {selected} FROM {self.table}{where}", params)  # type: ignore[arg-type]
            for rows in iter(partial(cursor.fetchmany, LOAD_BATCH), []):
                yield self._arrow(rows, names)

    def _arrow(self, rows: list[tuple[Any, ...]], names: Sequence[str]) -> pa.Table:
        data = {
            name: pa.array([r[i] for r in rows], type=_TYPES.get(name, pa.string()))
            for i, name in enumerate(names)
            if name != "vector"
        }
        if "vector" in names:
            at = list(names).index("vector")
            vectors = vectors_from_binary([bytes(r[at]) for r in rows], self.dimension)
            flat = pa.array(vectors.reshape(-1), type=pa.float32())
            data["vector"] = pa.FixedSizeListArray.from_arrays(flat, self.dimension)
        return pa.table(data)
