"""Requests per API key: a token bucket of ``per_minute`` tokens, refilled continuously.

One process keeps the buckets in memory. Several processes (``citewell serve --workers``,
or servers on one PostgreSQL) share them in the database, so a key's limit holds across all
of them: each request is one conditional UPDATE that takes a token only if one is there.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Protocol

from sqlalchemy import case, insert, select, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from citewell.config import Settings
from citewell.db import ensure_schema
from citewell.db.models import RateBucketRow
from citewell.errors import RateLimited


class RateLimiter(Protocol):
    def take(self, who: str) -> None:
        """Take one request from ``who``'s bucket, or raise RateLimited (429, Retry-After)."""
        ...


def _refused(capacity: float, rate: float, tokens: float) -> RateLimited:
    wait = max(1, math.ceil((1 - tokens) / rate))
    return RateLimited(
        f"More than {int(capacity)} requests a minute with this key "
        f"(rate_limit_per_minute); retry in {wait} s.",
        {"Retry-After": str(wait)},
    )


class MemoryRateLimiter:
    def __init__(self, per_minute: int) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, who: str) -> None:
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(who, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens < 1:
                raise _refused(self.capacity, self.rate, tokens)
            self._buckets[who] = (tokens - 1, now)


class DatabaseRateLimiter:
    """The same bucket, kept in the ``rate_buckets`` table (wall-clock time, so processes on
    several hosts agree within their clocks' skew)."""

    def __init__(self, engine: Engine, per_minute: int) -> None:
        ensure_schema(engine)
        self.engine = engine
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)

    def take(self, who: str) -> None:
        if self.rate <= 0:
            return
        now = time.time()
        row = RateBucketRow
        refilled = row.tokens + (now - row.last) * self.rate
        filled = case((refilled > self.capacity, self.capacity), else_=refilled)
        taking = update(row).where((row.key == who) & (filled >= 1))
        with self.engine.begin() as db:
            if db.dialect.name == "postgresql":
                # Don't wait for the WAL flush (a disk sync per request): a crash loses at
                # most the last few tokens taken, never a change anyone relies on.
                db.execute(text("SET LOCAL synchronous_commit TO OFF"))
            if db.execute(taking.values(tokens=filled - 1, last=now)).rowcount:
                return
            tokens = db.execute(select(filled).where(row.key == who)).scalar()
        if tokens is None and self._first(who, now):
            return
        if tokens is None:  # another process made the bucket just now
            self.take(who)
            return
        raise _refused(self.capacity, self.rate, float(tokens))

    def _first(self, who: str, now: float) -> bool:
        """A key's first request makes its bucket; False if another process made it first."""
        try:
            with self.engine.begin() as db:
                db.execute(
                    insert(RateBucketRow).values(key=who, tokens=self.capacity - 1, last=now)
                )
        except IntegrityError:
            return False
        return True


def rate_limiter(settings: Settings, engine: Engine) -> RateLimiter:
    """Shared buckets when other processes may serve the same keys, else memory."""
    if settings.database_url or settings.workers > 1:
        return DatabaseRateLimiter(engine, settings.rate_limit_per_minute)
    return MemoryRateLimiter(settings.rate_limit_per_minute)
