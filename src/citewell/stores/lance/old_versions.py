"""Removing a table's old versions, once an hour, beside the writes.

Every write, compaction and index delta leaves a version behind. Versions older than a week
(what LanceDB's own optimize keeps) and the files only they use are removed. At ten million
rows with a few thousand versions that took 6-9 s; under the store's write lock every write
waited that long, so it runs in a thread of its own. That is safe beside writes: Lance
keeps unreferenced files younger than a week (those of a write or compaction in progress)
unless ``delete_unverified`` is set, which this never does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from citewell.stores.background import wait_at_exit

log = logging.getLogger(__name__)

INTERVAL = 3600.0  # seconds between removals
KEEP_FOR = timedelta(days=7)


class OldVersions:
    """At most one removal at a time, at most one an ``interval``."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self._last = -interval  # the first call removes
        self._thread: threading.Thread | None = None
        wait_at_exit(self)  # a removal cut short by the exit aborted the process

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def remove_when_due(self, dataset: Callable[[], Any]) -> bool:
        """Start a removal on ``dataset()`` (a Lance dataset) if one is due and none runs;
        returns whether one started."""
        if self.running or time.monotonic() - self._last < self.interval:
            return False
        self._last = time.monotonic()
        self._thread = threading.Thread(
            target=self._remove, args=(dataset(),), name="citewell-old-versions", daemon=True
        )  # a process stopping mid-way leaves only old versions' files, removed next time
        self._thread.start()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a removal under way; returns whether none runs now."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    @staticmethod
    def _remove(dataset: Any) -> None:
        try:
            dataset.cleanup_old_versions(older_than=KEEP_FOR)
        except Exception as error:  # noqa: BLE001 (the writes go on; tried again next hour)
            log.warning(
                "Removing the table's old versions failed (tried again in an hour): %s", error
            )
