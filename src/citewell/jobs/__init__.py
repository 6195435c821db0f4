"""Durable ingestion: jobs in the metadata database and the worker that runs them."""

from citewell.jobs.runner import JobCancelled, JobRunner
from citewell.jobs.store import FINAL, RUNNING, STATES, Job, JobNotFound, JobStore

__all__ = [
    "FINAL",
    "RUNNING",
    "STATES",
    "Job",
    "JobCancelled",
    "JobNotFound",
    "JobRunner",
    "JobStore",
]
