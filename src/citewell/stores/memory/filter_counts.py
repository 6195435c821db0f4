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
        self._known: dict[Key, tuple[float, int, int | None, int | None]] = {}

    def __call__(self, key: Key, total: int | None = None, version: int | None = None) -> int:
        """``total`` and ``version``: the table's rows and version now. A key that kept
        every row when counted is counted again once either moved (another process wrote,
        even rows in and rows out alike): a stale count would take a part of the table for
        all of it, and score its keywords with statistics of rows its caller may not read."""
        now = time.monotonic()
        known = self._known.get(key)
        if known is not None and now - known[0] < COUNT_TTL:
            rows, then, then_version = known[1], known[2], known[3]
            if total is None or then is None or rows < then:
                return rows
            if total == then and version == then_version:
                return rows
        if len(self._known) > 1000:
            self._known.clear()
        rows = self._count(key)
        self._known[key] = (now, rows, total, version)
        return rows

    def forget(self) -> None:
        """Count every key afresh on its next call (a count turned out to be stale)."""
        self._known = {}
