"""An import batch's catalog rows written beside the next batch's chunks.

A batch's write was its chunks and stored texts, then its catalog transaction, one after
the other in the import's writing thread, which the file reader waits for: at ten million
rows the catalog was 27 % of that thread (journal, "The catalog beside the next batch").
Here a batch's catalog part runs in a thread of its own while the next batch's chunks are
written, and the parts run one at a time in the order given.

The ingestor's lock is not let go while a catalog part is pending: a writer let in then
would find chunks that no catalog row names yet (an upload of the same text would store
it again). So the lock is kept from one batch to the next, and let go, once every part is
written, when another writer waits for it (``TurnLock.waiting``; a batch's wait at most,
as before) or the import ends.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from citewell.jobs.turns import TurnLock

log = logging.getLogger(__name__)


class CatalogBehind:
    """Holds ``lock`` over consecutive batches; ``behind`` runs a batch's catalog part
    beside the next batch's chunk writes. Its methods are called from one thread."""

    def __init__(self, lock: TurnLock | threading.Lock) -> None:
        self._lock = lock
        self._held = False
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="citewell-import-catalog")
        self._pending: Future[None] | None = None

    def take(self) -> None:
        """At the start of a batch's write: the lock, unless kept from the batch before."""
        if not self._held:
            self._lock.acquire()
            self._held = True

    def behind(self, write: Callable[[], None]) -> None:
        """After a batch's chunks: its catalog part, once the one before is written (that
        one's error is raised here)."""
        self.drain()
        # The caller's context (the embedding tenant, the trace) goes with the write.
        self._pending = self._pool.submit(contextvars.copy_context().run, write)

    def drain(self) -> None:
        """Until the pending catalog part is written; its error is raised here."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def done(self) -> None:
        """At the end of a batch's write: let the lock go if another writer waits."""
        waiting = getattr(self._lock, "waiting", None)
        if waiting is not None and waiting():
            self.release()

    def release(self, failed: bool = False) -> None:
        """Write what is pending, then let the lock go (if held). After another error
        (``failed``) a pending part's error is logged rather than raised: the first one is
        what failed."""
        try:
            self.drain()
        except Exception as error:
            if not failed:
                raise
            log.warning("A catalog write failed after another error: %s", error)
        finally:
            if self._held:
                self._held = False
                self._lock.release()

    def close(self, failed: bool = False) -> None:
        """``release``, and stop the catalog's thread."""
        try:
            self.release(failed)
        finally:
            self._pool.shutdown(wait=True)
