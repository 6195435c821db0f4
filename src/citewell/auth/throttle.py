"""Password guessing, slowed without letting anyone lock a user out.

Failed sign-ins are counted per (name, address) and per name, over the last minute:

- ``per_address`` failures for a name from one address: that address waits for the name.
- ``per_name`` failures for a name from all addresses together (guessing from many addresses):
  only addresses that signed in to that name before keep trying; every other address gets 429
  whatever the password, so the pause tells an attacker nothing about a guess, and the owner,
  on an address they used before, is never locked out.

A correct password clears its address's count. Counts live in the process (server mode with
several processes counts per process).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque

from citewell.errors import RateLimited

WINDOW = 60.0  # seconds over which failures count
MAX_TRACKED = 10_000  # (name, address) pairs remembered before stale ones are dropped


class LoginThrottle:
    def __init__(self, per_address: int = 10, per_name: int = 100) -> None:
        self.per_address = per_address
        self.per_name = per_name
        self._failures: dict[tuple[str, str], deque[float]] = {}
        self._by_name: dict[str, deque[float]] = {}
        self._known: dict[str, set[str]] = {}  # name → addresses it signed in from
        self._lock = threading.Lock()

    def check(self, name: str, address: str) -> None:
        """RateLimited (429, Retry-After) when this attempt must wait."""
        now = time.monotonic()
        with self._lock:
            mine = _recent(self._failures.get((name, address)), now)
            if len(mine) >= self.per_address:
                wait = _wait(mine, now)
                raise RateLimited(
                    f"Too many failed sign-ins for {name!r} from your address; retry in "
                    f"{wait} s (API keys are not affected).",
                    {"Retry-After": str(wait)},
                )
            everyone = _recent(self._by_name.get(name), now)
            if len(everyone) >= self.per_name and address not in self._known.get(name, ()):
                wait = _wait(everyone, now)
                raise RateLimited(
                    f"Sign-in for {name!r} is paused for new addresses after many failed "
                    f"attempts; retry in {wait} s, sign in from an address you used before, "
                    "or use an API key.",
                    {"Retry-After": str(wait)},
                )

    def failed(self, name: str, address: str) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._failures) > MAX_TRACKED:
                self._forget_stale(now)
            self._failures.setdefault((name, address), deque()).append(now)
            self._by_name.setdefault(name, deque()).append(now)

    def succeeded(self, name: str, address: str) -> None:
        with self._lock:
            self._failures.pop((name, address), None)
            self._known.setdefault(name, set()).add(address)

    def _forget_stale(self, now: float) -> None:
        for key in [k for k, v in self._failures.items() if not _recent(v, now)]:
            del self._failures[key]
        for name in [n for n, v in self._by_name.items() if not _recent(v, now)]:
            del self._by_name[name]


def _recent(times: deque[float] | None, now: float) -> deque[float]:
    if times is None:
        return deque()
    while times and times[0] <= now - WINDOW:
        times.popleft()
    return times


def _wait(times: deque[float], now: float) -> int:
    return max(1, math.ceil(times[0] + WINDOW - now))
