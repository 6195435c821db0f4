"""Ingest jobs and batches as one caller sees them: a job of a KB they may not read does not
exist for them (the same answer as a missing one); changing one needs write access."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from citewell.auth.access import Access
from citewell.engine.scoped import Scoped
from citewell.errors import CitewellError, InvalidInput
from citewell.jobs import FINAL, STATES, Job, JobNotFound
from citewell.jobs.progress import Progress, ProgressTracker

__all__ = ["FINAL", "STATES", "Job", "JobService", "Progress", "ProgressTracker", "still_readable"]


class JobService:
    def __init__(self, view: Scoped) -> None:
        self.view = view
        self.access = view.access
        self.jobs = view.app.jobs

    def find(
        self,
        batch_id: str | None = None,
        knowledge_base: str | None = None,
        state: str | None = None,
    ) -> list[Job]:
        """Jobs of KBs the caller may read, oldest first, of one batch, KB or state."""
        if state is not None and state not in STATES:
            raise InvalidInput(f"state must be one of {', '.join(STATES)}.")
        kb_id = self.view.kb(knowledge_base).id if knowledge_base else None
        return self._visible(self.jobs.find(batch_id, kb_id, state))

    def get(self, job_id: str, write: bool = False) -> Job:
        try:
            job = self.jobs.get(job_id)
        except JobNotFound:
            raise _no_job(job_id) from None
        self._check(job, write)
        return job

    def batch(self, batch_id: str, write: bool = False) -> list[Job]:
        jobs = self._visible(self.jobs.find(batch_id=batch_id))
        if not jobs:
            raise JobNotFound(f"No batch {batch_id!r}; batch uploads answer with their batch_id.")
        self._check(jobs[0], write)  # a batch's jobs share one KB
        return jobs

    def cancel(self, job_id: str) -> Job:
        """Cancel a job that has not finished (one already parsing runs to its end)."""
        return self.jobs.cancel(self.get(job_id, write=True).id)

    def cancel_batch(self, batch_id: str) -> list[Job]:
        self.batch(batch_id, write=True)
        return self.jobs.cancel_batch(batch_id)

    def retry(self, job_id: str) -> Job:
        job = self.jobs.retry(self.get(job_id, write=True).id)
        if self.view.app.runner is not None:
            self.view.app.runner.wake()
        return job

    # What an event stream polls, after its first check: plain reads, re-checked by
    # ``still_readable`` on every poll.
    def kb_fetcher(self, knowledge_base: str) -> tuple[str, Callable[[], list[Job]]]:
        kb_id = self.view.kb(knowledge_base).id
        return kb_id, partial(self.jobs.find, kb_id=kb_id)

    def batch_fetcher(self, batch_id: str) -> Callable[[], list[Job]]:
        self.batch(batch_id)
        return partial(self.jobs.find, batch_id=batch_id)

    def job_fetcher(self, job_id: str) -> Callable[[], list[Job]]:
        self.get(job_id)
        return lambda: [self.jobs.get(job_id)]

    def _visible(self, jobs: list[Job]) -> list[Job]:
        """Jobs of readable KBs (re-embedding jobs, of no KB, only for admins)."""
        if self.access.readable is None:
            return jobs
        return [j for j in jobs if self.access.can_read(j.kb_id)]

    def _check(self, job: Job, write: bool) -> None:
        if self.access.readable is not None and not self.access.can_read(job.kb_id):
            raise _no_job(job.id)
        if write and job.kb_id:
            self.view.writable_kb(job.kb_id)
        elif write and (not self.access.is_admin or self.access.read_only):
            raise _no_job(job.id)


def _no_job(job_id: str) -> JobNotFound:
    """One answer for a job that does not exist and one the caller may not see."""
    return JobNotFound(f"No job {job_id!r}; GET /api/v1/jobs lists yours.")


def still_readable(recheck: Callable[[], Access | None], kb_id: str, jobs: list[Job]) -> bool:
    """Whether the caller (their access looked up afresh by ``recheck``) may still read the
    KB ``kb_id`` (may be empty) and every job's KB: a revoked grant or key, or a disabled
    user, ends a stream before its next event."""
    try:
        access = recheck()
    except CitewellError:  # e.g. the key's owner was deleted
        return False
    if access is None:
        return False
    if access.readable is None:
        return True
    kb_ids = {kb_id, *(job.kb_id for job in jobs)}
    return all(access.can_read(kb) for kb in kb_ids if kb) and all(j.kb_id for j in jobs)
