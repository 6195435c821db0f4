"""Ingest jobs and batches: status, cancel, retry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from citewell.api.deps import RecheckDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.schemas import BatchPublic, JobPublic
from citewell.services.jobs import Job, JobService, ProgressTracker, still_readable

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], route_class=OffLoopJsonRoute)


def get_jobs(view: ViewDep) -> JobService:
    return JobService(view)


JobsDep = Annotated[JobService, Depends(get_jobs)]


@router.get("")
def list_jobs(
    jobs: JobsDep,
    batch_id: str | None = None,
    knowledge_base: str | None = None,
    state: str | None = None,
) -> list[JobPublic]:
    """Jobs of KBs you may read, oldest first, optionally of one batch, one knowledge base or
    in one state."""
    return [JobPublic.of(j) for j in jobs.find(batch_id, knowledge_base, state)]


@router.get("/events", response_class=StreamingResponse)
def kb_events(
    knowledge_base: str, jobs: JobsDep, request: Request, recheck: RecheckDep
) -> StreamingResponse:
    """Server-sent events for every job of a knowledge base, as long as the client listens
    and may read the KB."""
    kb_id, fetch = jobs.kb_fetcher(knowledge_base)
    return _sse(_job_events(fetch, False, request, partial(still_readable, recheck, kb_id)))


@router.get("/batches/{batch_id}")
def get_batch(batch_id: str, jobs: JobsDep) -> BatchPublic:
    return BatchPublic.of(batch_id, jobs.batch(batch_id))


@router.post("/batches/{batch_id}/cancel")
def cancel_batch(batch_id: str, jobs: JobsDep) -> BatchPublic:
    """Cancel every job of the batch that has not started; running ones finish."""
    return BatchPublic.of(batch_id, jobs.cancel_batch(batch_id))


@router.get("/{job_id}")
def get_job(job_id: str, jobs: JobsDep) -> JobPublic:
    return JobPublic.of(jobs.get(job_id))


@router.post("/{job_id}/cancel")
def cancel_job(job_id: str, jobs: JobsDep) -> JobPublic:
    """Cancel a job that has not finished (one already parsing runs to its end)."""
    return JobPublic.of(jobs.cancel(job_id))


@router.post("/{job_id}/retry")
def retry_job(job_id: str, jobs: JobsDep) -> JobPublic:
    """Queue a failed or cancelled job again; its upload was kept, nothing to re-send."""
    return JobPublic.of(jobs.retry(job_id))


# --- progress events (SSE) ------------------------------------------------------------------
POLL_SECONDS = 0.25  # the database is the source of truth, so workers in other processes count
REVOKED = "You may no longer read this knowledge base (or your key was revoked)."


def _event(name: str, payload: str) -> str:
    return f"event: {name}\ndata: {payload}\n\n"


async def _job_events(
    fetch: Callable[[], list[Job]],
    until_done: bool,
    request: Request,
    allowed: Callable[[list[Job]], bool],
) -> AsyncIterator[str]:
    """'job' for every state change, then 'progress' (done/total, rate, ETA) after each round
    of changes; with ``until_done``, 'done' once every job has finished. Ends with 'revoked'
    as soon as the caller may no longer read what it streams."""
    seen: dict[str, tuple[str, int]] = {}
    tracker = ProgressTracker()
    while not await request.is_disconnected():
        jobs = await run_in_threadpool(fetch)
        if not await run_in_threadpool(allowed, jobs):
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
    batch_id: str, jobs: JobsDep, request: Request, recheck: RecheckDep
) -> StreamingResponse:
    """Server-sent events for a batch: 'job', 'progress', and 'done' at the end."""
    fetch = jobs.batch_fetcher(batch_id)
    return _sse(_job_events(fetch, True, request, partial(still_readable, recheck, "")))


@router.get("/{job_id}/events", response_class=StreamingResponse)
def job_events(
    job_id: str, jobs: JobsDep, request: Request, recheck: RecheckDep
) -> StreamingResponse:
    """Server-sent events for one job, until it has finished."""
    fetch = jobs.job_fetcher(job_id)
    return _sse(_job_events(fetch, True, request, partial(still_readable, recheck, "")))
