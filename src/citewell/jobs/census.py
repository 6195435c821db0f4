"""How the queue stands, for metrics: jobs by state, and how long the oldest queued job has
waited. One GROUP BY over the indexed state column and one MIN, whatever the history holds."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from citewell.db.models import JobRow
from citewell.jobs.states import STATES


@dataclass(frozen=True)
class QueueCensus:
    by_state: dict[str, int]  # every state, 0 included
    oldest_queued_seconds: float  # 0 when nothing waits


def queue_census(engine: Engine) -> QueueCensus:
    with engine.connect() as db:
        rows = db.execute(select(JobRow.state, func.count()).group_by(JobRow.state)).all()
        oldest = db.scalar(select(func.min(JobRow.created_at)).where(JobRow.state == "queued"))
    counts = dict.fromkeys(STATES, 0) | {str(s): int(n) for s, n in rows}
    waited = max(0.0, time.time() - oldest) if oldest is not None else 0.0
    return QueueCensus(counts, waited)
