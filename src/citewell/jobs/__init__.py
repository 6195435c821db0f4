"""Durable ingestion: jobs in the metadata database (the worker that runs them is
``citewell.engine.runner``)."""

from citewell.jobs.states import FINAL, RUNNING, STATES
from citewell.jobs.store import Job, JobNotFound, JobStore

__all__ = [
    "FINAL",
    "RUNNING",
    "STATES",
    "Job",
    "JobNotFound",
    "JobStore",
]
