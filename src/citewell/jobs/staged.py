"""Staged uploads that no job will read again."""

from __future__ import annotations

import time

from citewell.catalog.storage import FileStorage
from citewell.jobs.store import JobStore

ORPHAN_UPLOAD_SECONDS = 3600  # a staged upload with no job yet may be one being queued now


def stale_staged(jobs: JobStore, storage: FileStorage) -> list[str]:
    """Staged uploads nothing will read again: their job finished (a crash can land between
    the job's success and the upload's removal), or no job came for them within the hour."""
    known = {job.id: job for job in jobs.find()}
    cutoff = time.time() - ORPHAN_UPLOAD_SECONDS
    return sorted(
        job_id
        for job_id, staged_at in storage.staged_times().items()
        if (job_id in known and known[job_id].state in ("indexed", "cancelled"))
        or (job_id not in known and staged_at < cutoff)
    )
