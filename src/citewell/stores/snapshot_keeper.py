"""Keeps a small table's in-memory snapshot at the table's latest version, without making
searches wait for it.

Building a snapshot reads the whole table (0.3 s at 10,000 chunks, more near the ANN
threshold). Built inside the search that found it stale, every write stalled all searches
behind one rebuild: a server taking an upload a second answered searches in 0.7 s (the
soak benchmark). Now a stale or missing snapshot makes searches read the table itself
(fresh, some milliseconds slower) while one background thread builds the next snapshot;
writes made meanwhile make it build again before the result is used.
"""

from __future__ import annotations

import logging
import threading
import time

from citewell.stores.snapshot import SnapshotSource, TableSnapshot

log = logging.getLogger(__name__)

CHECK_INTERVAL = 1.0  # seconds between checks for writes by other processes (LanceDB)
RETRY_INTERVAL = 1.0  # after a failed build


class SnapshotKeeper:
    """``check_interval``: how often the table's version is read for writes by other
    processes. Reading LanceDB's goes through its event loop, where it would queue behind a
    running full-text query, so at most once a second (this process's own writes are known
    at once, through ``changed``). PostgreSQL's source answers from memory until a
    notification says the version moved (postgres_snapshot): asked before every use (0)."""

    def __init__(
        self, source: SnapshotSource, max_rows: int, check_interval: float = CHECK_INTERVAL
    ) -> None:
        self._source, self._max_rows, self._interval = source, max_rows, check_interval
        self._lock = threading.Lock()
        self._snapshot: TableSnapshot | None = None
        self._covers = -1  # table version the snapshot (or "too large: none") stands for
        self._checked = float("-inf")
        self._writes = 0  # this process's writes so far; a build started before one is stale
        self._building = False
        self._failed_at = float("-inf")

    def current(self) -> TableSnapshot | None:
        """The snapshot of the table's latest version, or None: the table is too large, or
        the snapshot is being brought up to date (read the table meanwhile)."""
        if self._max_rows <= 0:
            return None
        with self._lock:
            now = time.monotonic()
            if self._building or now - self._failed_at < RETRY_INTERVAL:
                return None
            # Too large for a snapshot: nothing stale can be served, so look again (has it
            # shrunk?) only now and then, not before every use.
            interval = self._interval if self._snapshot is not None else CHECK_INTERVAL
            if self._covers >= 0 and now - self._checked < interval:
                return self._snapshot
        version = self._source.version()  # outside the lock: a query, for PostgreSQL
        with self._lock:
            if self._building:
                return None
            if version == self._covers:  # (a write of ours since set it to -1)
                self._checked = now
                return self._snapshot
            self._start_build()
            return None

    def changed(self) -> None:
        """This process wrote to the table: the snapshot no longer holds it."""
        with self._lock:
            self._writes += 1
            self._snapshot, self._covers = None, -1

    def _start_build(self) -> None:
        self._building = True
        self._snapshot, self._covers = None, -1
        thread = threading.Thread(target=self._build, name="citewell-snapshot", daemon=True)
        thread.start()

    def _build(self) -> None:
        while True:
            with self._lock:
                writes = self._writes
            snapshot, version = None, -1
            try:
                version = self._source.version()
                if self._source.count_rows() < self._max_rows:
                    snapshot = self._source.load()
                    version = snapshot.version
            except Exception:  # noqa: BLE001 - a dropped table, a closing process: read the table
                log.debug("building the in-memory snapshot failed", exc_info=True)
                version = -1
            with self._lock:
                if writes == self._writes or version < 0:  # no write of ours since it began
                    self._snapshot, self._covers = snapshot, version
                    self._checked = time.monotonic()
                    if version < 0:
                        self._failed_at = self._checked  # try again a second later
                    self._building = False
                    return
