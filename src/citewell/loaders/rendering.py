"""The viewer's page images, rendered apart from ingestion and shared fairly between users.

Page renders have worker processes of their own (``render_workers``), each render a short
time limit of its own (``render_timeout``), and each user at most ``render_per_user``
renders in flight (more answer 429). Free workers go to the waiting users in turn, and one
user never holds every worker: so one user's slow pages (or a page built to be slow) delay
another user's page view by at most one render, and never a file's ingestion.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Protocol

from citewell.errors import RateLimited
from citewell.loaders.isolated import IsolatedReader, ReaderConfig

YIELD_AFTER = 1.0  # seconds: pages are drawn in well under this


class PageRenderer(Protocol):
    def render(self, data: bytes, page: int, width: int) -> bytes: ...


class FairGate:
    """``slots`` things to hold, handed to waiting callers by user in turn. Each user may
    have ``per_user`` requests in flight (held or waiting) and hold at most ``most_held``
    slots at once."""

    def __init__(self, slots: int, per_user: int, most_held: int | None = None) -> None:
        self.slots, self.per_user = max(1, slots), max(1, per_user)
        self.most_held = max(1, most_held if most_held is not None else self.slots - 1)
        self._free = self.slots
        self._held: dict[str, int] = {}
        self._waiting: OrderedDict[str, deque[object]] = OrderedDict()  # users in turn
        self._granted: set[object] = set()
        self._lock = threading.Condition()

    @contextmanager
    def slot(self, user: str) -> Iterator[None]:
        ticket = object()
        with self._lock:
            in_flight = self._held.get(user, 0) + len(self._waiting.get(user, ()))
            if in_flight >= self.per_user:
                raise RateLimited(
                    f"You have {in_flight} page images being drawn; wait for them before "
                    "asking for more (render_per_user).",
                    {"Retry-After": "1"},
                )
            self._waiting.setdefault(user, deque()).append(ticket)
            self._hand_out()
            while ticket not in self._granted:
                self._lock.wait()
            self._granted.discard(ticket)
        try:
            yield
        finally:
            with self._lock:
                self._held[user] -= 1
                if not self._held[user]:
                    del self._held[user]
                self._free += 1
                self._hand_out()

    def _hand_out(self) -> None:
        """Give free slots to the first waiting users in turn who may hold one more."""
        while self._free:
            user = next((u for u in self._waiting if self._held.get(u, 0) < self.most_held), None)
            if user is None:
                return
            waiting = self._waiting.pop(user)
            self._granted.add(waiting.popleft())
            if waiting:
                self._waiting[user] = waiting  # to the back of the turn
            self._held[user] = self._held.get(user, 0) + 1
            self._free -= 1
            self._lock.notify_all()


@dataclass(frozen=True)
class RenderLimits:
    workers: int = 3
    timeout: float = 10.0
    per_user: int = 2


class RenderPool:
    """Page images in worker processes of their own (or in this process, ``isolated``
    off), behind a FairGate."""

    def __init__(
        self, config: ReaderConfig, limits: RenderLimits, inline: PageRenderer | None = None
    ) -> None:
        workers = max(1, limits.workers)
        self.gate = FairGate(workers, limits.per_user, most_held=1)
        # A page still drawing after a second takes CPU only when others leave it idle.
        render_config = replace(config, timeout=limits.timeout, yield_after=YIELD_AFTER)
        self._inline = inline
        self._free: deque[IsolatedReader] = deque()
        self._readers: list[IsolatedReader] = []
        if inline is None:
            self._readers = [
                IsolatedReader(render_config, "drawing the page", "render_timeout")
                for _ in range(workers)
            ]
            self._free.extend(self._readers)
        self._lock = threading.Lock()

    def render(self, data: bytes, page: int, width: int, user: str = "") -> bytes:
        with self.gate.slot(user):
            if self._inline is not None:
                return self._inline.render(data, page, width)
            with self._lock:  # the gate holds as many slots as readers: one is free
                for idle in self._free:
                    idle.start()  # all up before they are needed: a start takes seconds
                reader = next((r for r in self._free if r.warm), self._free[0])
                self._free.remove(reader)
            try:
                return reader.render(data, page, width)
            finally:
                with self._lock:
                    self._free.append(reader)

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
