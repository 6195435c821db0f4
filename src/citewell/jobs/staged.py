"""Staged uploads that no job will read again."""

from __future__ import annotations

import time

from citewell.catalog.storage import FileStorage
from citewell.jobs.store import JobStore

ORPHAN_UPLOAD_SECONDS = 3600  # a staged upload with no job yet may be one being queued now


def stale_staged(jobs: JobStore, storage: FileStorage) -> list[str]:
    """Staged uploads nothing will read again: their job finished (a crash can land between
    the job's success and the upload's removal), or no job came for them within the hour."""
    staged = storage.staged_times()
    # Only the staged uploads' own jobs: a listing of all jobs is capped, and a queued
    # upload missing from it would look orphaned.
    states = jobs.states(sorted(staged))
    cutoff = time.time() - ORPHAN_UPLOAD_SECONDS
    return sorted(
        job_id
        for job_id, staged_at in staged.items()
        if states.get(job_id) in ("indexed", "cancelled")
        or (job_id not in states and staged_at < cutoff)
    )
