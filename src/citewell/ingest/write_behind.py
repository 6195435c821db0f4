"""One write at a time in a thread of its own, while the caller makes the next.

An import's batch write is mostly waits outside the interpreter (LanceDB's append, the
catalog's commits, the stored texts' process), and making the next batch is Python (rows
read from the file, BM25 terms, ids): done in turn, each waited for the other. Only one
write is ever in flight and they run in the order given, so what a crash leaves is what
it left before: whole batches, then the chunks and texts of the last batch or two without
catalog rows (an import writes a batch's catalog rows beside the next one's chunks:
catalog_behind.py; ``citewell check --repair`` removes those).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Self

log = logging.getLogger(__name__)


class WriteBehind:
    """``submit`` waits for the write before (raising its error) and starts the next one;
    leaving the block waits for the last. ``done`` is called after each write, in the
    caller's thread."""

    def __init__(
        self, done: Callable[[], None] | None = None, thread: str = "citewell-import-write"
    ) -> None:
        self._done = done
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=thread)
        self._pending: Future[None] | None = None

    def submit(self, write: Callable[[], None]) -> None:
        self.wait()
        # The caller's context (the embedding tenant, the trace) goes with the write.
        self._pending = self._pool.submit(contextvars.copy_context().run, write)

    def wait(self) -> None:
        """Until the write in flight is done; its error is raised here."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()
            if self._done:
                self._done()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: object, failure: object, trace: object) -> None:
        try:
            if failure is None:
                self.wait()
            elif self._pending is not None:  # the caller failed: its error is the one raised
                error = self._pending.exception()  # once the write is done
                if error is not None:
                    log.warning("A write failed after another error: %s", error)
        finally:
            self._pool.shutdown(wait=True)
