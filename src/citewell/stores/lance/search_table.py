"""The LanceDB table handle that searches go through, renewed now and then.

LanceDB's index cache keeps every index segment a search has read, with its file open,
until the cache is full by *bytes*. Each write batch adds small segments and merges replace
them; a replaced segment is never read again, yet it stays cached with its file open: about
one open file per write batch in the 2026-11 soak, far below the cache's byte bound, so a
server that ingests for days would reach the process's open-file limit ("Too many open
files"). Searches therefore use a table opened on a LanceDB session of their own, and that
session is replaced, warmed first, once the table has moved on ``renew_after_versions``
versions (a write batch makes about three). In-flight searches finish on the old handle.
Only a process that serves searches warms its handles (``warm``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from citewell.stores.background import wait_at_exit

log = logging.getLogger(__name__)

RENEW_AFTER_VERSIONS = 300
CHECK_EVERY_SECONDS = 5.0  # reading a table's version costs ~0.3 ms: not on every search


@dataclass(frozen=True)
class SearchHandle:
    """A table opened on a LanceDB session of its own, and the version it was opened at."""

    table: Any
    session: Any
    opened_at: int


class SearchTable:
    def __init__(
        self,
        open_handle: Callable[[], SearchHandle],
        warm: Callable[[Any], None],
        renew_after_versions: int = RENEW_AFTER_VERSIONS,
        check_every: float | None = None,
    ) -> None:
        self._open, self._warm = open_handle, warm
        self._renew_after = renew_after_versions
        self._check_every = CHECK_EVERY_SECONDS if check_every is None else check_every
        self._handle = open_handle()
        self._checked = time.monotonic()
        self._lock = threading.Lock()  # the handle's swap against this process's writes
        self._starting = threading.Lock()
        self._renewing: threading.Thread | None = None
        self._warmed = False  # this process serves searches: new handles are warmed too
        # A process hung for good at exit while a handle was being opened or warmed on
        # another thread: the exit waits for those (stores/background.py).
        wait_at_exit(self)

    def table(self) -> Any:
        """The table to search; starts a renewal in the background when it is due."""
        handle = self._handle
        now = time.monotonic()
        if now - self._checked >= self._check_every:
            self._checked = now
            if int(handle.table.version) - handle.opened_at >= self._renew_after:
                self.renew()
        return handle.table

    @property
    def cached_bytes(self) -> int:
        """What the current handle's session holds in LanceDB's caches."""
        return int(self._handle.session.size_bytes)

    def latest(self) -> None:
        """See this process's own write at once (other processes' within a second)."""
        with self._lock:
            self._handle.table.checkout_latest()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a renewal under way; returns whether none runs now."""
        renewing = self._renewing
        if renewing is not None:
            renewing.join(timeout)
        return renewing is None or not renewing.is_alive()

    def warm(self) -> threading.Thread:
        """Warm the current handle in the background, and every renewal's new handle
        before searches move to it: a process that serves searches asks at start. Others
        (commands, job workers) renew cold: a warm handle took 1.3 GB and seconds of CPU
        at a million chunks, and an exiting command waited for it."""
        self._warmed = True
        return self._start(self._warm_current)

    def renew(self) -> threading.Thread:
        """Open and warm a new handle in the background, then search with it."""
        return self._start(self._replace)

    def _start(self, work: Callable[[], None]) -> threading.Thread:
        with self._starting:
            if self._renewing is not None and self._renewing.is_alive():
                return self._renewing
            self._renewing = threading.Thread(target=work, name="citewell-search-table")
            self._renewing.daemon = True
            self._renewing.start()
            return self._renewing

    def _warm_current(self) -> None:
        self._warm(self._handle.table)

    def _replace(self) -> None:
        try:
            handle = self._open()
            if self._warmed:
                self._warm(handle.table)
        except Exception as error:  # noqa: BLE001 - the old handle keeps serving
            log.warning("Could not renew the search handle of the chunk table: %s", error)
            return
        with self._lock:  # no write of this process may fall between the two handles
            handle.table.checkout_latest()
            self._handle = handle
