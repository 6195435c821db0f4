"""Jobs whose worker is gone (killed, crashed, its host lost) or stalled past its lease go
back to the queue.

A worker that dies while it runs many jobs does not say which of them killed it, if any:
the restart of a host, the OOM killer or a deploy kills it just the same. Those jobs get the
attempt back and are claimed one at a time from then on (``run_alone``). A job lost while
it ran alone has the attempt counted and, after its last, fails with ``worker_lost``: a
file that crashes its worker fails instead of taking every worker down in turn, and the
files that shared its batch are not blamed for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, false, true, update
from sqlalchemy.orm import Session

from citewell.db.models import JobRow
from citewell.jobs.states import RUNNING

WORKER_LOST = (
    "The worker running this job stopped (killed or crashed) on every attempt while it ran "
    "this job alone; the file may be what crashes it. Check the worker's log, then retry "
    "the job."
)


def requeue_lost(session: Session, now: float, gone: Sequence[str]) -> int:
    """Queue again the running jobs whose lease passed or whose holder is ``gone``; fail
    those lost alone on their last attempt. How many went back to the queue."""
    lost = JobRow.state.in_(RUNNING) & ((JobRow.lease_until < now) | JobRow.holder.in_(gone))
    alone = lost & (JobRow.run_alone == true())
    session.execute(
        update(JobRow)
        .where(alone & (JobRow.attempts >= JobRow.max_attempts))
        .values(
            state="failed",
            last_error=WORKER_LOST,
            error_code="worker_lost",
            finished_at=now,
            updated_at=now,
        )
    )
    shared = _queue(session, lost & (JobRow.run_alone == false()), now, counted=False)
    return shared + _queue(session, alone, now, counted=True)


def _queue(session: Session, lost: ColumnElement[bool], now: float, counted: bool) -> int:
    values: dict[str, object] = {"state": "queued", "claim": "", "updated_at": now}
    if not counted:
        values.update(attempts=JobRow.attempts - 1, run_alone=True)
    result = session.execute(update(JobRow).where(lost).values(**values))
    return int(result.rowcount)  # type: ignore[attr-defined]
