"""Taking turns: jobs claimed by users in turn, and a lock taken in the order it was asked for.

The ingestor's lock is held by the job worker for a slice of queued files at a time and by
a user's upload for one file. With a plain lock the worker, releasing and asking again at
once, usually wins, so an upload could wait behind the whole queue; here the upload that
asked first is served first, so it waits for at most the slice in progress.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, TypeVar


class Queued(Protocol):
    """What taking turns reads of a job."""

    @property
    def id(self) -> str: ...

    @property
    def added_by(self) -> str: ...

    @property
    def created_at(self) -> float: ...


QueuedJob = TypeVar("QueuedJob", bound=Queued)


def in_turn(jobs: Sequence[QueuedJob]) -> list[QueuedJob]:
    """``jobs`` (oldest first) as users take turns: each user's first, then each second..."""
    taken: dict[str, int] = {}
    turns: dict[str, tuple[int, float]] = {}
    for job in jobs:
        taken[job.added_by] = taken.get(job.added_by, 0) + 1
        turns[job.id] = (taken[job.added_by], job.created_at)
    return sorted(jobs, key=lambda job: turns[job.id])


class TurnLock:
    """A non-reentrant lock (``threading.Lock``'s interface) served first come, first served."""

    def __init__(self) -> None:
        self._state = threading.Condition(threading.Lock())
        self._next = 0  # the ticket the next asker gets
        self._serving = 0  # the ticket that may hold the lock now
        self._held = False
        self._given_up: set[int] = set()  # tickets whose askers stopped waiting

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        with self._state:
            if not blocking and (self._held or self._next != self._serving):
                return False
            ticket = self._next
            self._next += 1
            waited = self._state.wait_for(
                lambda: ticket == self._serving and not self._held,
                None if timeout < 0 else timeout,
            )
            if not waited:  # gave up: pass the turn on as if it had been taken and freed
                self._skipped(ticket)
                return False
            self._held = True
            return True

    def release(self) -> None:
        with self._state:
            if not self._held:
                raise RuntimeError("release of an unlocked TurnLock")
            self._held = False
            self._serving += 1
            self._advance()
            self._state.notify_all()

    def locked(self) -> bool:
        with self._state:
            return self._held

    def waiting(self) -> bool:
        """Whether someone besides the holder waits for the lock now."""
        with self._state:
            asked = self._next - self._serving - len(self._given_up)
            return asked > (1 if self._held else 0)

    def _skipped(self, ticket: int) -> None:
        self._given_up.add(ticket)
        self._advance()
        self._state.notify_all()

    def _advance(self) -> None:
        while self._serving in self._given_up:
            self._given_up.discard(self._serving)
            self._serving += 1

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
