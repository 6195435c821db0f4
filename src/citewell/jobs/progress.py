"""Progress of a set of jobs, from successive looks at the job table: what the event streams
and the CLI's progress bar both show."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    finished: int
    total: int
    files_per_s: float
    eta_s: float | None  # None until a rate is known


class ProgressTracker:
    """Rate and ETA over the jobs that finished since the first look (jobs that were already
    done when a client started watching do not inflate the rate)."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._finished_at_start: int | None = None

    def update(self, finished: int, total: int) -> Progress:
        if self._finished_at_start is None:
            self._finished_at_start = finished
        elapsed = time.monotonic() - self._started
        rate = (finished - self._finished_at_start) / elapsed if elapsed > 0 else 0.0
        eta = (total - finished) / rate if rate > 0 else None
        return Progress(finished, total, round(rate, 3), eta)
