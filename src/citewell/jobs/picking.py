"""Which queued jobs a claim takes, and the statement that marks them taken. Users take
turns (each user's oldest job, then each user's second oldest...), found through the
``ix_jobs_queue`` index (state, added_by, created_at) in time that grows with the users
waiting and the claim's size, not with the queue.

Ranking every queued job in one window query cost 4-10 ms a claim with 3,000 queued and
45-70 ms with 30,000: draining a queue took time quadratic in its length (decision 0039).
Here the users with queued jobs are found by skipping from one to the next in the index,
each one's oldest due job by its first index entries, and then only the users who can have
a turn in this claim are read, at most ``limit`` jobs each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    Update,
    bindparam,
    false,
    func,
    select,
    true,
    update,
)
from sqlalchemy.orm import Session

from citewell.db.models import JobRow

JOBS = JobRow.__table__


@dataclass(frozen=True)
class Due:
    """Which queued jobs a claim may take: due by ``now``, of ``operations`` only (None:
    any), not added by the users ``other_than``."""

    now: float
    operations: tuple[str, ...] | None = None
    other_than: tuple[str, ...] = field(default=())

    def shape(self) -> tuple[bool, bool]:
        return self.operations is not None, bool(self.other_than)

    def params(self, limit: int) -> dict[str, Any]:
        values: dict[str, Any] = {"now": self.now, "limit": limit}
        if self.operations is not None:
            values["operations"] = list(self.operations)
        if self.other_than:
            values["other_than"] = sorted(set(self.other_than))
        return values


@dataclass(frozen=True)
class Waiting:
    """A queued job as the turns see it."""

    id: str
    added_by: str
    created_at: float


def pick(session: Session, due: Due, limit: int, lock: bool) -> list[str]:
    """The ids of up to ``limit`` jobs that are ``due``, in turn order. With ``lock``
    (PostgreSQL) the rows are locked, skipping those another claim holds."""
    params = due.params(limit)
    users = list(session.scalars(_first_users(*due.shape()), params))
    oldest = _oldest_of(*due.shape(), lock)
    waiting = [
        [Waiting(*row) for row in session.execute(oldest, {**params, "user": user})]
        for user in users
    ]
    ranked = [(turn, job.created_at, job.id) for jobs in waiting for turn, job in enumerate(jobs)]
    return [job_id for _, _, job_id in sorted(ranked)[:limit]]


def pick_alone(session: Session, due: Due, lock: bool) -> list[str]:
    """The oldest ``due`` job that must run by itself (jobs/lost.py), if any."""
    query = _alone(*due.shape(), lock)
    return list(session.scalars(query, due.params(1)))


# The statements are built once per shape, their values bound at each claim: SQLAlchemy
# keys its compiled statements by a statement's structure, which it works out again for
# every new statement object (5 ms a claim for the recursive one, under the GIL).
def _due(operations: bool, other_than: bool) -> ColumnElement[bool]:
    due = (JobRow.state == "queued") & (JobRow.not_before <= bindparam("now"))
    if operations:
        due = due & JobRow.operation.in_(bindparam("operations", expanding=True))
    if other_than:
        due = due & JobRow.added_by.not_in(bindparam("other_than", expanding=True))
    return due


def _shared(operations: bool, other_than: bool) -> ColumnElement[bool]:
    """Due, and free to share a claim with other jobs."""
    return _due(operations, other_than) & (JobRow.run_alone == false())


@lru_cache(maxsize=8)
def _alone(operations: bool, other_than: bool, lock: bool) -> Select[str]:
    query = (
        select(JobRow.id)
        .where(_due(operations, other_than) & (JobRow.run_alone == true()))
        .order_by(JobRow.created_at)
        .limit(bindparam("limit"))
    )
    return query.with_for_update(skip_locked=True) if lock else query


@lru_cache(maxsize=8)
def _oldest_of(operations: bool, other_than: bool, lock: bool) -> Select[str, str, float]:
    """A user's (``:user``) oldest due jobs, ``:limit`` of them."""
    query = (
        select(JobRow.id, JobRow.added_by, JobRow.created_at)
        .where(_shared(operations, other_than) & (JobRow.added_by == bindparam("user")))
        .order_by(JobRow.created_at)
        .limit(bindparam("limit"))
    )
    return query.with_for_update(skip_locked=True) if lock else query


@lru_cache(maxsize=4)
def _first_users(operations: bool, other_than: bool) -> Select[Any]:
    """The ``:limit`` users (at most) whose oldest due job is oldest: only they can have a
    turn in a claim of that many jobs. Distinct users come from a recursive skip through
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
        .where(_shared(operations, other_than) & (JobRow.added_by == users.c.user))
        .scalar_subquery()
        .label("first_due")
    )
    ranked = select(users.c.user, first_due).where(users.c.user.is_not(None)).subquery()
    return (
        select(ranked.c.user)
        .where(ranked.c.first_due.is_not(None))
        .order_by(ranked.c.first_due, ranked.c.user)
        .limit(bindparam("limit"))
    )


def marking(columns: Sequence[ColumnElement[Any]]) -> Update:
    """Mark the jobs ``:picked`` that are still queued as claimed by ``:token``, returning
    their ``columns``. Built once, like the picks."""
    # As an expression, so SQLite finds the rows by id instead of scanning the queue.
    still_queued = JobRow.state.concat("") == "queued"
    return (
        update(JobRow)
        .where(JobRow.id.in_(bindparam("picked", expanding=True)) & still_queued)
        .values(
            state="parsing",
            claim=bindparam("token"),
            attempts=JobRow.attempts + 1,
            updated_at=bindparam("now"),
            lease_until=bindparam("lease_until"),
            holder=bindparam("holder"),
        )
        .returning(*columns)
        .execution_options(synchronize_session=False)
    )
