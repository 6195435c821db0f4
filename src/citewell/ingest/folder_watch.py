"""Folder connectors watched for changes, in the process that runs jobs: a change under a
connector's folder queues its sync at once (one sync job per connector at a time; changes
while it runs queue the next). The full rescan every interval stays, since a watch can miss
events (a network mount, a folder replaced, a restart).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from citewell.ingest.connector_runs import ConnectorRuns

logger = logging.getLogger("citewell.connectors")

LOOK_EVERY = 5.0  # seconds between looks for connectors made, paused or deleted
DEBOUNCE_MS = 300  # changes within this long are one batch (an editor's save, a git pull)


class FolderWatcher:
    def __init__(self, runs: ConnectorRuns, wake: Callable[[], None]) -> None:
        self.runs, self.wake = runs, wake
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Changed while their sync ran (it may have listed the folder before the change):
        # queued again once that run is over.
        self._pending: set[str] = set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="citewell-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def folders(self) -> dict[str, Path]:
        """Connector id → folder, for every folder connector not paused whose folder is
        here (on PostgreSQL another machine's folder may not be)."""
        found = {}
        for connector in self.runs.store.of_kbs(None):
            folder = Path(connector.target)
            if connector.kind == "folder" and not connector.paused and folder.is_dir():
                found[connector.id] = folder.resolve()
        return found

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                watched = self.folders()
                if not watched:
                    self._stop.wait(LOOK_EVERY)
                    continue
                self._watch(watched)
            except Exception as error:  # the watch must outlive a database hiccup or a lost folder
                logger.warning("watching connector folders failed: %s", error)
                self._stop.wait(LOOK_EVERY)

    def _watch(self, watched: dict[str, Path]) -> None:
        """Until a connector is made, paused or deleted (then the caller looks again)."""
        import watchfiles

        looked = time.monotonic()
        for changes in watchfiles.watch(
            *sorted(set(watched.values())),
            stop_event=self._stop,
            rust_timeout=1000,  # at least once a second: pending syncs are queued again
            yield_on_timeout=True,
            debounce=DEBOUNCE_MS,
            step=50,
        ):
            if changes:
                self._touched(watched, [Path(path) for _, path in changes])
            if self._pending:
                self._queue_pending()
            if time.monotonic() - looked >= LOOK_EVERY:
                if self.folders() != watched:
                    return
                looked = time.monotonic()

    def _touched(self, watched: dict[str, Path], paths: list[Path]) -> None:
        for connector_id, root in watched.items():
            if any(path.is_relative_to(root) for path in paths):
                self._pending.add(connector_id)

    def _queue_pending(self) -> None:
        """A sync for each pending connector that will list its folder after the change: a
        queued one (new or waiting); a running one may have listed it before."""
        queued = False
        for connector_id in list(self._pending):
            connector = self.runs.store.get(connector_id)
            if connector is None or connector.paused:
                self._pending.discard(connector_id)
                continue
            if self.runs.queue(connector).state == "queued":
                self._pending.discard(connector_id)
                queued = True
        if queued:
            self.wake()
