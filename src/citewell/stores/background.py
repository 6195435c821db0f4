"""The stores' background threads, waited for before the interpreter exits.

LanceDB and Lance do their work in Rust with the GIL released. When the interpreter
finalizes while such a call runs on a daemon thread, the thread is stopped as it takes the
GIL back, and that forced unwind through Rust frames aborts the whole process (SIGABRT,
exit 134): a ``citewell check --repair`` died so after printing its repair, its removal of
old versions still under way. A thread waiting in Python (a sleep, a queue) is harmless.

So each store part that calls into a store from a thread of its own registers here. At
exit, ``exiting`` is set (long copies stop at their next batch, loops start no new call),
then each part's ``wait`` is given what is left of ``SETTLE_SECONDS``.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import time
import weakref
from typing import Protocol

from citewell.errors import StoreError

log = logging.getLogger(__name__)

SETTLE_SECONDS = 120.0  # the longest an exiting process waits for its stores' threads
exiting = threading.Event()  # set once the interpreter exits


class BackgroundWork(Protocol):
    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the store call under way on a thread of this part's; returns whether
        none runs now."""
        ...


_PARTS: weakref.WeakSet[BackgroundWork] = weakref.WeakSet()


class Exiting(StoreError):
    """The process is exiting: background work stops here."""


def wait_at_exit(part: BackgroundWork) -> None:
    """Have the exit wait for ``part``'s background store calls."""
    _register_once()
    _PARTS.add(part)


class StoreCalls:
    """Held by a thread of a part while it calls the store: ``with calls as allowed`` (False
    once the exit has begun: start nothing). The exit waits for the call under way."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        wait_at_exit(self)

    def __enter__(self) -> bool:
        self._lock.acquire()
        return not exiting.is_set()

    def __exit__(self, *_: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._lock.release()
        return True


def stop_if_exiting() -> None:
    """Between the batches of a long read: end it when the process is exiting."""
    if exiting.is_set():
        raise Exiting("The process is exiting.")


@functools.cache
def _register_once() -> None:
    # Registered when the first part is made, after LanceDB has loaded, so it runs first
    # (at-exit handlers run last registered first) while LanceDB's event loop still runs.
    atexit.register(wait_for_all)


def wait_for_all(seconds: float = SETTLE_SECONDS) -> bool:
    """Stop the registered parts' work and wait for it; returns whether all of it ended."""
    exiting.set()
    deadline = time.monotonic() + seconds
    ended = True
    for part in list(_PARTS):
        try:
            ended = part.wait(max(0.0, deadline - time.monotonic())) and ended
        except Exception:  # noqa: BLE001 - the other parts are still waited for
            log.exception("Waiting for %s at exit failed", type(part).__name__)
    if not ended:
        log.warning("Exiting with store work still running after %.0f s.", seconds)
    return ended
