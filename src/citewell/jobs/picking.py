"""Which queued jobs a claim takes: users take turns (each user's oldest job, then each
user's second oldest...), found through the ``ix_jobs_queue`` index (state, added_by,
created_at) in time that grows with the users waiting and the claim's size, not with the
queue.

Ranking every queued job in one window query cost 4-10 ms a claim with 3,000 queued and
45-70 ms with 30,000: draining a queue took time quadratic in its length (decision 0039).
Here the users with queued jobs are found by skipping from one to the next in the index,
each one's oldest due job by its first index entries, and then only the users who can have
a turn in this claim are read, at most ``limit`` jobs each.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from citewell.db.models import JobRow

JOBS = JobRow.__table__


@dataclass(frozen=True)
class Waiting:
    """A queued job as the turns see it."""

    id: str
    added_by: str
    created_at: float


def pick(session: Session, due: ColumnElement[bool], limit: int, lock: bool) -> list[str]:
    """The ids of up to ``limit`` jobs matching ``due`` (queued ones), in turn order. With
    ``lock`` (PostgreSQL) the rows are locked, skipping those another claim holds."""
    users = _first_users(session, due, limit)
    waiting: list[list[Waiting]] = []
    for user in users:
        query = (
            select(JobRow.id, JobRow.added_by, JobRow.created_at)
            .where(due & (JobRow.added_by == user))
            .order_by(JobRow.created_at)
            .limit(limit)
        )
        if lock:
            query = query.with_for_update(skip_locked=True)
        waiting.append([Waiting(*row) for row in session.execute(query)])
    ranked = [(turn, job.created_at, job.id) for jobs in waiting for turn, job in enumerate(jobs)]
    return [job_id for _, _, job_id in sorted(ranked)[:limit]]


def _first_users(session: Session, due: ColumnElement[bool], limit: int) -> list[str]:
    """The ``limit`` users (at most) whose oldest due job is oldest: only they can have a
    turn in a claim of ``limit`` jobs. Distinct users come from a recursive skip through
    the index (one look-up a user), as neither SQLite nor PostgreSQL skips on its own."""
    queued = JobRow.state == "queued"
    users = (
        select(func.min(JobRow.added_by).label("user")).where(queued).cte("users", recursive=True)
    )
    later = JOBS.alias("later")
    following = (
        select(func.min(later.c.added_by))
        .where((later.c.state == "queued") & (later.c.added_by > users.c.user))
        .scalar_subquery()
    )
    users = users.union_all(select(following).where(users.c.user.is_not(None)))
    first_due = (
        select(func.min(JobRow.created_at))
        .where(due & (JobRow.added_by == users.c.user))
        .scalar_subquery()
        .label("first_due")
    )
    ranked = select(users.c.user, first_due).where(users.c.user.is_not(None)).subquery()
    query = (
        select(ranked.c.user)
        .where(ranked.c.first_due.is_not(None))
        .order_by(ranked.c.first_due, ranked.c.user)
        .limit(limit)
    )
    return list(session.scalars(query))
