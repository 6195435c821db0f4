"""Prometheus metrics: what every process counts (requests, retrieval stages, LLM tokens,
embeddings, errors, jobs, connector runs) and what a scrape reads from the database (jobs
by state, the queue's oldest wait, KBs, files and chunks). Labels are route templates,
stages, models, kinds and stable codes: never a KB's, file's or user's name.

With several API processes (``citewell serve --workers``) the CLI points prometheus_client
at a shared directory (its multiprocess mode) before any process imports it, and a scrape
of any process sums them all."""

from citewell.metrics.counters import (
    count_cache,
    count_connector_run,
    count_embedding,
    count_error,
    count_jobs,
    count_llm_call,
    count_request,
    count_stages,
)

__all__ = [
    "count_cache",
    "count_connector_run",
    "count_embedding",
    "count_error",
    "count_jobs",
    "count_llm_call",
    "count_request",
    "count_stages",
]
