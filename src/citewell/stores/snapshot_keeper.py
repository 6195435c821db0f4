"""Keeps a small table's in-memory snapshot at the table's latest version, without making
searches wait for it.

Building a snapshot reads the whole table (0.3 s at 10,000 chunks, more near the ANN
threshold). Built inside the search that found it stale, every write stalled all searches
behind one rebuild: a server taking an upload a second answered searches in 0.7 s (the
soak benchmark). Now a stale or missing snapshot makes searches read LanceDB itself
(fresh, some milliseconds slower) while one background thread builds the next snapshot;
writes made meanwhile make it build again before the result is used.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from citewell.stores.snapshot import TableSnapshot

log = logging.getLogger(__name__)

CHECK_INTERVAL = 1.0  # seconds between checks for writes by other processes


class SnapshotKeeper:
    def __init__(self, table: Any, dimension: int, max_rows: int) -> None:
        self._table, self._dimension, self._max_rows = table, dimension, max_rows
        self._lock = threading.Lock()
        self._snapshot: TableSnapshot | None = None
        self._covers = -1  # table version the snapshot (or "too large: none") stands for
        self._checked = float("-inf")
        self._writes = 0  # this process's writes so far; a build started before one is stale
        self._building = False
        self._failed_at = float("-inf")

    def current(self) -> TableSnapshot | None:
        """The snapshot of the table's latest version, or None: the table is too large, or
        the snapshot is being brought up to date (read LanceDB meanwhile).

        Reading the table's version goes through LanceDB's event loop, where it would queue
        behind a running full-text query; so it is read at most once per CHECK_INTERVAL
        (this process's own writes are known at once, through ``changed``)."""
        with self._lock:
            now = time.monotonic()
            if self._building or now - self._failed_at < CHECK_INTERVAL:
                return None
            if self._covers >= 0 and now - self._checked < CHECK_INTERVAL:
                return self._snapshot
            version = self._table.version
            self._checked = now
            if version == self._covers:
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
                version = self._table.version
                if self._table.count_rows() < self._max_rows:
                    snapshot = TableSnapshot.load(self._table, self._dimension)
                    version = snapshot.version
            except Exception:  # noqa: BLE001 - a dropped table, a closing process: read LanceDB
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
