"""Jobs in the metadata database: what is queued, running, done or failed, durably.

Claiming is one UPDATE that marks queued rows with a fresh token, so two workers (threads or
processes) never take the same job; on PostgreSQL the rows are picked with ``FOR UPDATE SKIP
LOCKED``, so concurrent claims take different jobs instead of waiting on each other. A claimed
job carries a lease that its worker renews while it runs; a job whose lease has passed (its
worker was killed, or its host lost) goes back to the queue for any worker to take.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields

from sqlalchemy import ColumnElement, bindparam, func, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from citewell.db import ensure_schema
from citewell.db.models import Base, JobRow
from citewell.errors import InvalidInput, NotFoundError
from citewell.jobs import holders
from citewell.jobs.lost import requeue_lost
from citewell.jobs.picking import Due, marking, pick, pick_alone
from citewell.jobs.states import ENDABLE, FINAL, RUNNING
from citewell.jobs.turns import in_turn


class JobNotFound(NotFoundError):
    code = "job_not_found"


@dataclass(frozen=True)
class Job:
    id: str
    batch_id: str
    kb_id: str
    operation: str
    name: str
    key: str
    state: str
    attempts: int
    max_attempts: int
    last_error: str
    error_code: str
    file_id: str
    created_at: float
    updated_at: float
    finished_at: float
    added_by: str = ""  # the user who queued it: its file's link in the KB names them
    lease_until: float = 0.0
    claim: str = ""  # the token of the claim that runs it: only its holder may end it
    run_alone: bool = False  # claimed by itself (jobs/lost.py)

    @property
    def done(self) -> bool:
        return self.state in FINAL


JOB_FIELDS = tuple(field.name for field in fields(Job))


# A job's columns read without the ORM: a claim's or a batch's 64-250 rows loaded as ORM
# objects cost a few ms each time under the GIL.
JOB_COLUMNS = tuple(JobRow.__table__.c[name] for name in JOB_FIELDS)


def _job(row: JobRow) -> Job:
    return Job(**{name: getattr(row, name) for name in JOB_FIELDS})


TAKE = marking(JOB_COLUMNS)


def _held(condition: ColumnElement[bool], claim: str | None) -> ColumnElement[bool]:
    """``condition``, and with ``claim``: only while that claim holds the job (fencing)."""
    return condition if claim is None else condition & (JobRow.claim == claim)


class JobStore:
    def __init__(self, engine: Engine, lease_seconds: float = 30.0) -> None:
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self.lease_seconds = lease_seconds

    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex

    def enqueue(
        self,
        kb_id: str,
        files: Sequence[tuple[str, str, str]],
        max_attempts: int = 3,
        operation: str = "ingest",
        batch_id: str | None = None,
        added_by: str = "",
    ) -> list[Job]:
        """One queued job per (job id, name, key), all in one batch (a new one unless given).
        Ids come from ``new_id`` so the caller can stage each upload before its job can be
        claimed. An ingest job's key is the file's path in the KB; a re-embed job's is the
        file id."""
        batch, now = batch_id or uuid.uuid4().hex, time.time()
        rows = [
            JobRow(
                id=job_id,
                batch_id=batch,
                kb_id=kb_id,
                operation=operation,
                name=name,
                key=key,
                max_attempts=max_attempts,
                added_by=added_by,
                created_at=now + i * 1e-6,  # keeps upload order when claiming
                updated_at=now,
            )
            for i, (job_id, name, key) in enumerate(files)
        ]
        with self._sessions() as session, session.begin():
            session.add_all(rows)
        return [_job(r) for r in rows]

    def claim(
        self,
        limit: int,
        operations: Sequence[str] | None = None,
        other_than: Sequence[str] = (),
        alone: bool = True,
    ) -> list[Job]:
        """Up to ``limit`` queued jobs that are due (of ``operations`` only, if given; not
        added by the users ``other_than``), now 'parsing' and ours. Users take turns: each
        user's oldest job first, then each user's second oldest, and so on, so one user's
        thousand queued files do not hold another user's single upload back by more than
        one job each. A job to run alone (jobs/lost.py) comes first and by itself; without
        ``alone`` (a claim that will run beside another) such jobs are left."""
        token, now = uuid.uuid4().hex, time.time()
        due = Due(now, None if operations is None else tuple(operations), tuple(other_than))
        while True:  # until a claim takes some, or none is due
            with self._sessions() as session, session.begin():
                lock = session.get_bind().dialect.name == "postgresql"
                picked = pick_alone(session, due, lock) if alone else []
                picked = picked or pick(session, due, limit, lock)
                if not picked:
                    return []
                taken = self._take(session, picked, token, now)
                if taken:
                    return in_turn(sorted(taken, key=lambda job: (job.created_at, job.id)))

    def alone_due(self, operations: Sequence[str] | None = None) -> bool:
        """Whether a job that must run by itself waits (a claim beside it must wait too)."""
        due = Due(time.time(), None if operations is None else tuple(operations))
        with self._sessions() as session:
            return bool(pick_alone(session, due, lock=False))

    def _take(self, session: Session, picked: list[str], token: str, now: float) -> list[Job]:
        """Mark the picked jobs still queued as claimed by ``token``; those that were. On
        SQLite another claim may have taken them between the pick and this write (on
        PostgreSQL the pick locked them)."""
        values = {"picked": picked, "token": token, "now": now}
        values.update(lease_until=now + self.lease_seconds, holder=holders.this_process())
        return [Job(*row) for row in session.execute(TAKE, values)]

    def get(self, job_id: str) -> Job:
        with self._sessions() as session:
            row = session.get(JobRow, job_id)
            if row is None:
                raise JobNotFound(f"No job {job_id!r}; list jobs with GET /api/v1/jobs.")
            return _job(row)

    def find(
        self, batch_id: str | None = None, kb_id: str | None = None, state: str | None = None
    ) -> list[Job]:
        query = select(*JOB_COLUMNS).order_by(JobRow.created_at)
        if batch_id:
            query = query.where(JobRow.batch_id == batch_id)
        if kb_id:
            query = query.where(JobRow.kb_id == kb_id)
        if state:
            query = query.where(JobRow.state == state)
        with self._sessions() as session:
            return [Job(*row) for row in session.execute(query.limit(10_000))]

    def states(self, job_ids: Sequence[str]) -> dict[str, str]:
        """Job id → state, for those of ``job_ids`` that exist."""
        found: dict[str, str] = {}
        with self._sessions() as session:
            for start in range(0, len(job_ids), 1000):  # bounded IN lists
                part = job_ids[start : start + 1000]
                rows = session.execute(select(JobRow.id, JobRow.state).where(JobRow.id.in_(part)))
                found.update((job_id, state) for job_id, state in rows)
        return found

    def unfinished(
        self, operation: str, key: str, states: Sequence[str] = ("queued", *RUNNING)
    ) -> Job | None:
        """A job of ``operation`` on ``key`` (a connector's sync) in one of these states."""
        query = select(JobRow).where(
            (JobRow.operation == operation) & (JobRow.key == key) & JobRow.state.in_(states)
        )
        with self._sessions() as session:
            row = session.scalars(query.limit(1)).first()
            return _job(row) if row is not None else None

    def running_elsewhere(self, job: Job) -> bool:
        """Whether another batch runs a job of the same operation and key (a second sync
        of one connector must wait for the first)."""
        query = select(JobRow.id).where(
            (JobRow.operation == job.operation)
            & (JobRow.key == job.key)
            & JobRow.state.in_(RUNNING)
            & (JobRow.claim != job.claim)
        )
        with self._sessions() as session:
            return session.scalars(query.limit(1)).first() is not None

    def defer(self, job: Job, seconds: float) -> None:
        """Back to the queue for ``seconds``, the attempt not counted (it did not start)."""
        with self._sessions() as session, session.begin():
            session.execute(
                update(JobRow)
                .where(_held((JobRow.id == job.id) & JobRow.state.in_(RUNNING), job.claim))
                .values(
                    state="queued",
                    claim="",
                    attempts=JobRow.attempts - 1,
                    not_before=time.time() + seconds,
                )
            )

    def counts(self, batch_id: str) -> dict[str, int]:
        """How many jobs of the batch are in each state (any batch size, one query)."""
        query = (
            select(JobRow.state, func.count())
            .where(JobRow.batch_id == batch_id)
            .group_by(JobRow.state)
        )
        with self._sessions() as session:
            return {state: int(n) for state, n in session.execute(query)}

    def _set(
        self,
        job_id: str,
        only_from: Sequence[str] | None = None,
        fence: str | None = None,
        **values: object,
    ) -> bool:
        """Update one job (only while its state is in ``only_from`` and, given ``fence``,
        while that claim holds it); True if it changed."""
        condition = _held(JobRow.id == job_id, fence)
        if only_from is not None:
            condition = condition & JobRow.state.in_(only_from)
        with self._sessions() as session, session.begin():
            result = session.execute(
                update(JobRow).where(condition).values(updated_at=time.time(), **values)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def advance(self, job_id: str, state: str, claim: str | None = None) -> None:
        self._set(job_id, only_from=RUNNING, fence=claim, state=state)

    def advance_many(self, job_ids: Sequence[str], state: str, claim: str | None = None) -> None:
        """Several running jobs to the next step, in one transaction."""
        if not job_ids:
            return
        with self._sessions() as session, session.begin():
            session.execute(
                update(JobRow)
                .where(_held(JobRow.id.in_(job_ids) & JobRow.state.in_(RUNNING), claim))
                .values(state=state, updated_at=time.time())
            )

    def succeed_many(self, done: Sequence[tuple[str, str]], claim: str | None = None) -> None:
        """``succeed`` for several (job id, file id) pairs, in one transaction. With
        ``claim``, only jobs that claim still holds: a worker whose lease was taken over
        (it stalled; another runs its jobs now) leaves them to the new holder."""
        if not done:
            return
        now = time.time()
        statement = (
            update(Base.metadata.tables["jobs"])
            # Plain comparisons: an IN list cannot be part of an executemany statement.
            .where(
                _held(
                    (JobRow.id == bindparam("job")) & or_(*(JobRow.state == s for s in ENDABLE)),
                    claim,
                )
            )
            .values(
                state="indexed",
                file_id=bindparam("file"),
                last_error="",
                error_code="",
                finished_at=now,
                updated_at=now,
            )
        )
        with self._sessions() as session, session.begin():
            session.connection().execute(statement, [{"job": j, "file": f} for j, f in done])

    def succeed(self, job_id: str, file_id: str, claim: str | None = None) -> None:
        """Indexed; also when a cancel came after the job had started (it ran to the end)."""
        self.succeed_many([(job_id, file_id)], claim)

    def fail(
        self,
        job_id: str,
        message: str,
        code: str,
        retry_in: float | None,
        claim: str | None = None,
    ) -> bool:
        """Failed for good, or (``retry_in`` seconds, attempts left) queued again; True if
        it will be retried. With ``claim``, only while that claim holds the job."""
        job = self.get(job_id)
        if retry_in is not None and job.attempts < job.max_attempts:
            return self._set(
                job_id,
                only_from=RUNNING,
                fence=claim,
                state="queued",
                claim="",
                last_error=message,
                error_code=code,
                not_before=time.time() + retry_in,
            )
        self._set(
            job_id,
            only_from=RUNNING,
            fence=claim,
            state="failed",
            last_error=message,
            error_code=code,
            finished_at=time.time(),
        )
        return False

    def cancel(self, job_id: str) -> Job:
        """Cancel a job that has not finished; a running one stops before its next step."""
        self.get(job_id)
        self._set(
            job_id, only_from=("queued", *RUNNING), state="cancelled", finished_at=time.time()
        )
        return self.get(job_id)

    def cancel_batch(self, batch_id: str) -> list[Job]:
        for job in self.find(batch_id=batch_id):
            if not job.done:
                self.cancel(job.id)
        return self.find(batch_id=batch_id)

    def retry(self, job_id: str) -> Job:
        """Queue a failed or cancelled job again, with a fresh set of attempts."""
        job = self.get(job_id)
        if job.state not in ("failed", "cancelled"):
            raise InvalidInput(f"Job {job_id} is {job.state}; only failed or cancelled jobs retry.")
        self._set(
            job_id,
            only_from=("failed", "cancelled"),
            state="queued",
            claim="",
            not_before=0.0,
            max_attempts=job.attempts + job.max_attempts,
        )
        return self.get(job_id)

    def requeue(self, job_id: str) -> None:
        """A running job whose worker is gone goes back to the queue."""
        self._set(job_id, only_from=RUNNING, state="queued", claim="")

    def renew(self, job_ids: Sequence[str], claim: str | None = None) -> int:
        """Extend the leases of running jobs (their worker is alive); how many it kept."""
        if not job_ids:
            return 0
        now = time.time()
        with self._sessions() as session, session.begin():
            result = session.execute(
                update(JobRow)
                .where(_held(JobRow.id.in_(job_ids) & JobRow.state.in_(RUNNING), claim))
                .values(lease_until=now + self.lease_seconds)
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def taken_over(self, job_ids: Sequence[str], claim: str) -> int:
        """How many of these jobs another claim is running now (jobs that ended or wait
        for a retry are not counted)."""
        if not job_ids:
            return 0
        with self._sessions() as session:
            return int(
                session.scalar(
                    select(func.count())
                    .select_from(JobRow)
                    .where(
                        JobRow.id.in_(job_ids) & JobRow.state.in_(RUNNING) & (JobRow.claim != claim)
                    )
                )
                or 0
            )

    def release(self, job_ids: Sequence[str], claim: str | None = None) -> int:
        """Hand running jobs back to the queue now (a worker shutting down mid-batch), the
        attempt not counted: nothing went wrong with them."""
        if not job_ids:
            return 0
        with self._sessions() as session, session.begin():
            result = session.execute(
                update(JobRow)
                .where(_held(JobRow.id.in_(job_ids) & JobRow.state.in_(RUNNING), claim))
                .values(
                    state="queued",
                    claim="",
                    attempts=JobRow.attempts - 1,
                    lease_until=0.0,
                    updated_at=time.time(),
                )
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def requeue_expired(self) -> int:
        """Running jobs whose lease has passed or whose holder is gone go back to the queue
        (jobs/lost.py says which attempts count)."""
        with self._sessions() as session, session.begin():
            held_by = session.scalars(
                select(JobRow.holder).where(JobRow.state.in_(RUNNING)).distinct()
            )
            gone = [h for h in held_by if h and holders.is_gone(h)]
            return requeue_lost(session, time.time(), gone)
