"""The ``jobs`` section: the job queue and its workers."""

from __future__ import annotations

from citewell.config.fields import Section, setting


class JobSection(Section):
    """The queue of ingestion jobs and its workers."""

    job_batch_files: int = setting(
        64,
        "Queued files the worker takes at once (more for small files: job_batch_max_files); "
        "their chunks are embedded together, so many small files still make full embedding "
        "batches.",
    )

    job_batch_max_files: int = setting(
        256,
        "How many files the worker takes at once while the files it ingested lately made few "
        "chunks each (about as many chunks as job_batch_files files of eight chunks). Each "
        "take has fixed costs, so one-paragraph files go faster in bigger takes; files of "
        "eight chunks or more are taken job_batch_files at a time. Set it to job_batch_files "
        "to keep every take that size.",
        ge=1,
    )

    job_slice_files: int = setting(
        64,
        "Of the files taken at once, how many at most are ingested under one hold of the "
        "index's lock (more in proportion when a take of small files grows past "
        "job_batch_files). A user's upload that asks for the lock meanwhile ends the hold after "
        "the files already begun and goes first, so it never waits for the whole batch.",
        ge=1,
    )

    job_max_attempts: int = setting(
        3, "Attempts a job gets when it fails for a reason that may pass (a service down)."
    )

    job_retry_seconds: float = setting(
        2.0, "Wait before the first retry of a job; doubled for each further attempt."
    )

    job_lease_seconds: float = setting(
        30.0,
        "A running job belongs to its worker for this long; the worker renews it every third "
        "of it while alive. A killed worker's jobs are queued again for any worker once it "
        "passes.",
        gt=1,
    )

    max_batch_files: int = setting(1000, "Most files one batch upload request may carry.")

    serve_job_worker: bool = setting(
        True,
        "Run queued ingest jobs inside `citewell serve`. Turn off when `citewell worker` "
        "processes run them instead.",
    )
