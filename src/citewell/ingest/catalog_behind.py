"""An import batch's catalog rows written beside the next batch's chunks.

A batch's write was its chunks and stored texts, then its catalog transaction, one after
the other in the import's writing thread, which the file reader waits for: at ten million
rows the catalog was 27 % of that thread (journal, "The catalog beside the next batch").
Here a batch's catalog part runs in a thread of its own while the next batch's chunks are
written, and the parts run one at a time in the order given (a ``WriteBehind`` of them).

The ingestor's lock is not let go while a catalog part is pending: a writer let in then
would find chunks that no catalog row names yet (an upload of the same text would store
it again). So the lock is kept from one batch to the next, and let go, once every part is
written, when another writer waits for it (``TurnLock.waiting``; a batch's wait at most,
as before) or the import ends.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from citewell.ingest.write_behind import WriteBehind

if TYPE_CHECKING:
    from citewell.jobs.turns import TurnLock

log = logging.getLogger(__name__)


class CatalogBehind(WriteBehind):
    """Holds ``lock`` over consecutive batches. ``submit`` a batch's catalog part after its
    chunks: it runs once the part before is written (whose error is raised there), beside
    the next batch's chunks; ``wait`` until it is written. Called from one thread."""

    def __init__(self, lock: TurnLock | threading.Lock) -> None:
        super().__init__(thread="citewell-import-catalog")
        self._lock = lock
        self._held = False

    def take(self) -> None:
        """At the start of a batch's write: the lock, unless kept from the batch before."""
        if not self._held:
            self._lock.acquire()
            self._held = True

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
            self.wait()
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

    def __exit__(self, kind: object, failure: object, trace: object) -> None:
        """Leaving the block: the last part written, the lock let go, the thread stopped."""
        self.close(failed=failure is not None)
