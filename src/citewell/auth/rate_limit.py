"""Requests per user (all of their API keys together: minting keys buys no more): a token
bucket of ``per_minute`` tokens, refilled continuously.

One process keeps the buckets in memory. Several processes (``citewell serve --workers``,
or servers on one PostgreSQL) share them in the database, so a user's limit holds across all
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

    def take_held(self, who: str) -> bool:
        """``take`` without touching the database: False (nothing taken) when it would."""
        ...


def _refused(capacity: float, rate: float, tokens: float) -> RateLimited:
    wait = max(1, math.ceil((1 - tokens) / rate))
    return RateLimited(
        f"More than {int(capacity)} requests a minute from this user (all keys together) "
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

    def take_held(self, who: str) -> bool:
        self.take(who)
        return True


CLAIM_SHARE = 50  # a process claims a fiftieth of the budget at a time (12 of 600)
MAX_CLAIM = 20
CLAIM_SECONDS = 5.0  # claimed tokens not spent by then are dropped, never returned


class DatabaseRateLimiter:
    """The same bucket, kept in the ``rate_buckets`` table (wall-clock time, so processes on
    several hosts agree within their clocks' skew).

    A process takes tokens from the shared bucket a few at a time (a fiftieth of the
    budget, at most MAX_CLAIM; one for budgets under 100 a minute) and spends them from
    memory, so most requests write nothing: a write per request was about 2 ms on
    PostgreSQL, and on SQLite with several workers every request queued for the file's
    write lock. Tokens only leave the shared bucket, so the budget still holds across
    processes; what a process claimed and did not spend within CLAIM_SECONDS is dropped,
    so a busy key may be refused up to a claim per process early."""

    def __init__(self, engine: Engine, per_minute: int) -> None:
        ensure_schema(engine)
        self.engine = engine
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self.claim = max(1, min(MAX_CLAIM, per_minute // CLAIM_SHARE))
        self._held: dict[str, tuple[int, float]] = {}  # key -> (tokens, claimed at)
        self._lock = threading.Lock()

    def take(self, who: str) -> None:
        if self.rate <= 0 or self._spend_held(who):
            return
        left = self._claim(who, self.claim)
        if left is None:
            self._hold(who, self.claim - 1)
            return
        if self.claim > 1 and left >= 1:  # fewer than a claim left: the last one at a time
            left = self._claim(who, 1)
            if left is None:
                return
        if left == _NO_BUCKET and self._first(who):
            return
        if left == _NO_BUCKET:  # another process made the bucket just now
            self.take(who)
            return
        raise _refused(self.capacity, self.rate, left)

    def take_held(self, who: str) -> bool:
        return self.rate <= 0 or self._spend_held(who)

    def _spend_held(self, who: str) -> bool:
        with self._lock:
            tokens, since = self._held.get(who, (0, 0.0))
            if tokens <= 0 or time.monotonic() - since > CLAIM_SECONDS:
                return False
            self._held[who] = (tokens - 1, since)
            return True

    def _hold(self, who: str, tokens: int) -> None:
        if tokens > 0:
            with self._lock:
                if len(self._held) > 10_000:
                    self._held.clear()
                self._held[who] = (tokens, time.monotonic())

    def _claim(self, who: str, size: int) -> float | None:
        """Takes ``size`` tokens (None), or says how many the bucket has (_NO_BUCKET: none)."""
        now = time.time()
        row = RateBucketRow
        refilled = row.tokens + (now - row.last) * self.rate
        filled = case((refilled > self.capacity, self.capacity), else_=refilled)
        taking = update(row).where((row.key == who) & (filled >= size))
        with self.engine.begin() as db:
            if db.dialect.name == "postgresql":
                # Don't wait for the WAL flush (a disk sync per request): a crash loses at
                # most the last few tokens taken, never a change anyone relies on.
                db.execute(text("SET LOCAL synchronous_commit TO OFF"))
            if db.execute(taking.values(tokens=filled - size, last=now)).rowcount:
                return None
            tokens = db.execute(select(filled).where(row.key == who)).scalar()
        return _NO_BUCKET if tokens is None else float(tokens)

    def _first(self, who: str) -> bool:
        """A key's first request makes its bucket; False if another process made it first."""
        try:
            with self.engine.begin() as db:
                db.execute(
                    insert(RateBucketRow).values(
                        key=who, tokens=self.capacity - self.claim, last=time.time()
                    )
                )
        except IntegrityError:
            return False
        self._hold(who, self.claim - 1)
        return True


_NO_BUCKET = -1.0


def rate_limiter(settings: Settings, engine: Engine) -> RateLimiter:
    """Shared buckets when other processes may serve the same keys, else memory."""
    if settings.storage.database_url or settings.server.workers > 1:
        return DatabaseRateLimiter(engine, settings.access.rate_limit_per_minute)
    return MemoryRateLimiter(settings.access.rate_limit_per_minute)
