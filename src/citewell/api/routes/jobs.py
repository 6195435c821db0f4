"""Ingest jobs and batches: status, cancel, retry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from citewell.api.deps import CitewellDep
from citewell.api.schemas import BatchPublic, JobPublic
from citewell.errors import InvalidInput
from citewell.jobs import STATES, Job, JobNotFound
from citewell.jobs.progress import ProgressTracker

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])


@router.get("")
def list_jobs(
    app: CitewellDep,
    batch_id: str | None = None,
    knowledge_base: str | None = None,
    state: str | None = None,
) -> list[JobPublic]:
    """Jobs, oldest first, optionally of one batch, one knowledge base or in one state."""
    if state is not None and state not in STATES:
        raise InvalidInput(f"state must be one of {', '.join(STATES)}.")
    kb_id = app.kb_id(knowledge_base) if knowledge_base else None
    return [JobPublic.of(j) for j in app.jobs.find(batch_id, kb_id, state)]


@router.get("/events", response_class=StreamingResponse)
def kb_events(knowledge_base: str, app: CitewellDep, request: Request) -> StreamingResponse:
    """Server-sent events for every job of a knowledge base, as long as the client listens."""
    kb_id = app.kb_id(knowledge_base)
    return _sse(_job_events(lambda: app.jobs.find(kb_id=kb_id), False, request))


@router.get("/batches/{batch_id}")
def get_batch(batch_id: str, app: CitewellDep) -> BatchPublic:
    return BatchPublic.of(batch_id, _batch(app, batch_id))


@router.post("/batches/{batch_id}/cancel")
def cancel_batch(batch_id: str, app: CitewellDep) -> BatchPublic:
    """Cancel every job of the batch that has not started; running ones finish."""
    _batch(app, batch_id)
    return BatchPublic.of(batch_id, app.jobs.cancel_batch(batch_id))


@router.get("/{job_id}")
def get_job(job_id: str, app: CitewellDep) -> JobPublic:
    return JobPublic.of(app.jobs.get(job_id))


@router.post("/{job_id}/cancel")
def cancel_job(job_id: str, app: CitewellDep) -> JobPublic:
    """Cancel a job that has not finished (one already parsing runs to its end)."""
    return JobPublic.of(app.jobs.cancel(job_id))


@router.post("/{job_id}/retry")
def retry_job(job_id: str, app: CitewellDep) -> JobPublic:
    """Queue a failed or cancelled job again; its upload was kept, nothing to re-send."""
    job = app.jobs.retry(job_id)
    if app.runner is not None:
        app.runner.wake()
    return JobPublic.of(job)


def _batch(app: CitewellDep, batch_id: str) -> list[Job]:
    jobs = app.jobs.find(batch_id=batch_id)
    if not jobs:
        raise JobNotFound(f"No batch {batch_id!r}; batch uploads answer with their batch_id.")
    return jobs


# --- progress events (SSE) ------------------------------------------------------------------
POLL_SECONDS = 0.25  # the database is the source of truth, so workers in other processes count


def _event(name: str, payload: str) -> str:
    return f"event: {name}\ndata: {payload}\n\n"


async def _job_events(
    fetch: Callable[[], list[Job]], until_done: bool, request: Request
) -> AsyncIterator[str]:
    """'job' for every state change, then 'progress' (done/total, rate, ETA) after each round
    of changes; with ``until_done``, 'done' once every job has finished."""
    seen: dict[str, tuple[str, int]] = {}
    tracker = ProgressTracker()
    while not await request.is_disconnected():
        jobs = await run_in_threadpool(fetch)
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
def batch_events(batch_id: str, app: CitewellDep, request: Request) -> StreamingResponse:
    """Server-sent events for a batch: 'job', 'progress', and 'done' at the end."""
    _batch(app, batch_id)
    return _sse(_job_events(lambda: app.jobs.find(batch_id=batch_id), True, request))


@router.get("/{job_id}/events", response_class=StreamingResponse)
def job_events(job_id: str, app: CitewellDep, request: Request) -> StreamingResponse:
    """Server-sent events for one job, until it has finished."""
    app.jobs.get(job_id)
    return _sse(_job_events(lambda: [app.jobs.get(job_id)], True, request))
