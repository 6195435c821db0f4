"""How many rows a filter keeps, remembered for a while: both chunk stores use the count to
pick a plan (index partitions to probe, where to check a filter), never as an answer."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

COUNT_TTL = 30.0  # seconds a filter's row count is reused

Key = TypeVar("Key", bound=Hashable)


class FilterCounts(Generic[Key]):
    """``count(key)`` at most once per COUNT_TTL per key (a predicate, a ChunkFilter)."""

    def __init__(self, count: Callable[[Key], int]) -> None:
        self._count = count
        self._known: dict[Key, tuple[float, int]] = {}

    def __call__(self, key: Key) -> int:
        now = time.monotonic()
        known = self._known.get(key)
        if known is not None and now - known[0] < COUNT_TTL:
            return known[1]
        if len(self._known) > 1000:
            self._known.clear()
        rows = self._count(key)
        self._known[key] = (now, rows)
        return rows

    def recount(self, key: Key) -> int:
        """``key`` counted now, whatever its age."""
        self._known.pop(key, None)
        return self(key)

    def forget(self) -> None:
        """Count every key afresh on its next call (a count turned out to be stale)."""
        self._known = {}
