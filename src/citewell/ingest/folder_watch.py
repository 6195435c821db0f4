"""Folder connectors watched for changes, in the process that runs jobs: a change under a
connector's folder queues its sync at once (a change while one runs queues one more behind
it; a connector's syncs run one at a time). When a watch begins (the server starts, a
connector is made, the watch recovers from an error) its folders are synced once, for what
changed while nothing watched. The full rescan every interval stays, since a watch can miss
events (a network mount, a folder replaced).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from citewell.ingest.connector_runs import ConnectorRuns

logger = logging.getLogger("citewell.sources.connectors")

LOOK_EVERY = 5.0  # seconds between looks for connectors made, paused or deleted
DEBOUNCE_MS = 300  # changes within this long are one batch (an editor's save, a git pull)


class FolderWatcher:
    def __init__(self, runs: ConnectorRuns, wake: Callable[[], None]) -> None:
        self.runs, self.wake = runs, wake
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watching: set[str] = set()  # connectors whose folders the last watch covered

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
                self._watching = set()  # changes meanwhile went unseen: catch up after
                self._stop.wait(LOOK_EVERY)

    def _watch(self, watched: dict[str, Path]) -> None:
        """Until a connector is made, paused or deleted (then the caller looks again)."""
        import watchfiles

        looked, unseen = time.monotonic(), set(watched) - self._watching
        for changes in watchfiles.watch(
            *sorted(set(watched.values())),
            stop_event=self._stop,
            rust_timeout=1000,
            yield_on_timeout=True,
            debounce=DEBOUNCE_MS,
            step=50,
        ):
            if unseen:  # the watch is on now; what changed before it began is synced once
                self._queue({c: watched[c] for c in unseen}, list(watched.values()))
                self._watching, unseen = set(watched), set()
            if changes:
                self._queue(watched, [Path(path) for _, path in changes])
            if time.monotonic() - looked >= LOOK_EVERY:
                if self.folders() != watched:
                    return
                looked = time.monotonic()

    def _queue(self, watched: dict[str, Path], paths: list[Path]) -> None:
        """A sync of each connector whose folder changed that lists it after the change:
        one waiting already, or a new one (behind a run that may have listed it before)."""
        queued = False
        for connector_id, root in watched.items():
            if not any(path.is_relative_to(root) for path in paths):
                continue
            connector = self.runs.store.get(connector_id)
            if connector is not None and not connector.paused:
                self.runs.queue(connector, after_running=True)
                queued = True
        if queued:
            self.wake()
