"""Ingest jobs and batches: status, cancel, retry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict
from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from citewell.api.deps import RecheckDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.schemas import BatchPublic, JobPublic
from citewell.auth.access import Access
from citewell.errors import CitewellError, InvalidInput
from citewell.jobs import STATES, Job, JobNotFound
from citewell.jobs.progress import ProgressTracker

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], route_class=OffLoopJsonRoute)


@router.get("")
def list_jobs(
    view: ViewDep,
    batch_id: str | None = None,
    knowledge_base: str | None = None,
    state: str | None = None,
) -> list[JobPublic]:
    """Jobs of KBs you may read, oldest first, optionally of one batch, one knowledge base or
    in one state."""
    if state is not None and state not in STATES:
        raise InvalidInput(f"state must be one of {', '.join(STATES)}.")
    kb_id = view.kb(knowledge_base).id if knowledge_base else None
    return [JobPublic.of(j) for j in _visible(view, view.app.jobs.find(batch_id, kb_id, state))]


@router.get("/events", response_class=StreamingResponse)
def kb_events(
    knowledge_base: str, view: ViewDep, request: Request, recheck: RecheckDep
) -> StreamingResponse:
    """Server-sent events for every job of a knowledge base, as long as the client listens
    and may read the KB."""
    kb_id = view.kb(knowledge_base).id
    fetch = partial(view.app.jobs.find, kb_id=kb_id)
    return _sse(_job_events(fetch, False, request, _Reader(recheck, kb_id)))


@router.get("/batches/{batch_id}")
def get_batch(batch_id: str, view: ViewDep) -> BatchPublic:
    return BatchPublic.of(batch_id, _batch(view, batch_id))


@router.post("/batches/{batch_id}/cancel")
def cancel_batch(batch_id: str, view: ViewDep) -> BatchPublic:
    """Cancel every job of the batch that has not started; running ones finish."""
    _batch(view, batch_id, write=True)
    return BatchPublic.of(batch_id, view.app.jobs.cancel_batch(batch_id))


@router.get("/{job_id}")
def get_job(job_id: str, view: ViewDep) -> JobPublic:
    return JobPublic.of(_job(view, job_id))


@router.post("/{job_id}/cancel")
def cancel_job(job_id: str, view: ViewDep) -> JobPublic:
    """Cancel a job that has not finished (one already parsing runs to its end)."""
    return JobPublic.of(view.app.jobs.cancel(_job(view, job_id, write=True).id))


@router.post("/{job_id}/retry")
def retry_job(job_id: str, view: ViewDep) -> JobPublic:
    """Queue a failed or cancelled job again; its upload was kept, nothing to re-send."""
    job = view.app.jobs.retry(_job(view, job_id, write=True).id)
    if view.app.runner is not None:
        view.app.runner.wake()
    return JobPublic.of(job)


def _visible(view: ViewDep, jobs: list[Job]) -> list[Job]:
    """Jobs of readable KBs (re-embedding jobs, of no KB, only for admins)."""
    if view.access.readable is None:
        return jobs
    return [j for j in jobs if view.access.can_read(j.kb_id)]


def _check(view: ViewDep, job: Job, write: bool) -> None:
    """A job of a KB the caller may not read does not exist for it; changing needs write."""
    if view.access.readable is not None and not view.access.can_read(job.kb_id):
        raise _no_job(job.id)
    if write and job.kb_id:
        view.writable_kb(job.kb_id)
    elif write and (not view.access.is_admin or view.access.read_only):
        raise _no_job(job.id)


def _no_job(job_id: str) -> JobNotFound:
    """One answer for a job that does not exist and one the caller may not see."""
    return JobNotFound(f"No job {job_id!r}; GET /api/v1/jobs lists yours.")


def _job(view: ViewDep, job_id: str, write: bool = False) -> Job:
    try:
        job = view.app.jobs.get(job_id)
    except JobNotFound:
        raise _no_job(job_id) from None
    _check(view, job, write)
    return job


def _batch(view: ViewDep, batch_id: str, write: bool = False) -> list[Job]:
    jobs = _visible(view, view.app.jobs.find(batch_id=batch_id))
    if not jobs:
        raise JobNotFound(f"No batch {batch_id!r}; batch uploads answer with their batch_id.")
    _check(view, jobs[0], write)  # a batch's jobs share one KB
    return jobs


# --- progress events (SSE) ------------------------------------------------------------------
POLL_SECONDS = 0.25  # the database is the source of truth, so workers in other processes count
REVOKED = "You may no longer read this knowledge base (or your key was revoked)."


def _event(name: str, payload: str) -> str:
    return f"event: {name}\ndata: {payload}\n\n"


class _Reader:
    """Whether the stream's caller may still read its KB, checked on every poll: a revoked
    grant or key, or a disabled user, ends the stream before the next event."""

    def __init__(self, recheck: Callable[[], Access | None], kb_id: str = "") -> None:
        self.recheck, self.kb_id = recheck, kb_id

    def allows(self, jobs: list[Job]) -> bool:
        try:
            access = self.recheck()
        except CitewellError:  # e.g. the key's owner was deleted
            return False
        if access is None:
            return False
        if access.readable is None:
            return True
        kb_ids = {self.kb_id, *(job.kb_id for job in jobs)}
        return all(access.can_read(kb) for kb in kb_ids if kb) and all(j.kb_id for j in jobs)


async def _job_events(
    fetch: Callable[[], list[Job]], until_done: bool, request: Request, reader: _Reader
) -> AsyncIterator[str]:
    """'job' for every state change, then 'progress' (done/total, rate, ETA) after each round
    of changes; with ``until_done``, 'done' once every job has finished. Ends with 'revoked'
    as soon as the caller may no longer read what it streams."""
    seen: dict[str, tuple[str, int]] = {}
    tracker = ProgressTracker()
    while not await request.is_disconnected():
        jobs = await run_in_threadpool(fetch)
        if not await run_in_threadpool(reader.allows, jobs):
            yield _event("revoked", json.dumps({"detail": REVOKED}))
            return
        changed = [j for j in jobs if seen.get(j.id) != (j.state, j.attempts)]
        for job in changed:
            seen[job.id] = (job.state, job.attempts)
            yield _event("job", JobPublic.of(job).model_dump_json())
        finished = sum(job.done for job in jobs)
        if changed:
            progress = tracker.update(finished, len(jobs))
            yield _event("progress", json.dumps(asdict(progress)))
        if until_done and jobs and finished == len(jobs):
            yield _event("done", json.dumps({"total": len(jobs)}))
            return
        await asyncio.sleep(POLL_SECONDS)


def _sse(events: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


@router.get("/batches/{batch_id}/events", response_class=StreamingResponse)
def batch_events(
    batch_id: str, view: ViewDep, request: Request, recheck: RecheckDep
) -> StreamingResponse:
    """Server-sent events for a batch: 'job', 'progress', and 'done' at the end."""
    _batch(view, batch_id)
    fetch = partial(view.app.jobs.find, batch_id=batch_id)
    return _sse(_job_events(fetch, True, request, _Reader(recheck)))


@router.get("/{job_id}/events", response_class=StreamingResponse)
def job_events(
    job_id: str, view: ViewDep, request: Request, recheck: RecheckDep
) -> StreamingResponse:
    """Server-sent events for one job, until it has finished."""
    _job(view, job_id)
    return _sse(_job_events(lambda: [view.app.jobs.get(job_id)], True, request, _Reader(recheck)))
