"""The metrics every process keeps, and one small function per thing counted."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Histogram,
)

# Citewell's own registry, not prometheus_client's global one: importing this module again
# (a test that imports every module afresh) makes a new one instead of a clash of names.
REGISTRY = CollectorRegistry()
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)

# Seconds: from a cached retrieval (a few ms) to a slow LLM answer (a minute).
LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
STAGE = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)

REQUESTS = Counter(
    "citewell_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
REQUEST_SECONDS = Histogram(
    "citewell_http_request_duration_seconds",
    "Time to answer an HTTP request (to the end of its body), by method and route template.",
    ["method", "route"],
    buckets=LATENCY,
    registry=REGISTRY,
)
STAGE_SECONDS = Histogram(
    "citewell_retrieval_stage_seconds",
    "Time of each retrieval stage: embed (the query), vector, keyword, sentences, fetch, "
    "rerank, total.",
    ["stage"],
    buckets=STAGE,
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "citewell_llm_tokens",
    "LLM tokens, by model and kind (prompt, completion).",
    ["model", "kind"],
    registry=REGISTRY,
)
LLM_SECONDS = Histogram(
    "citewell_llm_request_duration_seconds",
    "Time of an LLM call (a stream: to its last piece), by model.",
    ["model"],
    buckets=LATENCY,
    registry=REGISTRY,
)
EMBEDDED = Counter(
    "citewell_embedded_texts",
    "Texts the embedding model encoded, by kind.",
    ["kind"],
    registry=REGISTRY,
)
EMBED_SECONDS = Histogram(
    "citewell_embed_duration_seconds",
    "Time the embedding model took for one call, by kind.",
    ["kind"],
    buckets=STAGE + (5, 10, 30),
    registry=REGISTRY,
)
CACHE_LOOKUPS = Counter(
    "citewell_embedding_cache_lookups",
    "Embedding cache lookups, by kind and result (hit, miss).",
    ["kind", "result"],
    registry=REGISTRY,
)
ERRORS = Counter(
    "citewell_errors",
    "Error answers, by stable code and HTTP status.",
    ["code", "status"],
    registry=REGISTRY,
)
JOBS = Counter(
    "citewell_jobs_handled",
    "Jobs a worker took, by operation and outcome (taken; retried or failed for those that "
    "failed).",
    ["operation", "outcome"],
    registry=REGISTRY,
)
CONNECTOR_RUNS = Counter(
    "citewell_connector_runs",
    "Connector syncs finished, by kind and outcome.",
    ["kind", "outcome"],
    registry=REGISTRY,
)


def count_request(method: str, route: str, status: int, seconds: float) -> None:
    REQUESTS.labels(method, route, str(status)).inc()
    REQUEST_SECONDS.labels(method, route).observe(seconds)


def count_stages(timings_ms: Mapping[str, float]) -> None:
    for stage, ms in timings_ms.items():
        STAGE_SECONDS.labels(stage).observe(ms / 1000)


def count_llm_call(model: str, prompt: int, completion: int, seconds: float) -> None:
    LLM_TOKENS.labels(model, "prompt").inc(prompt)
    LLM_TOKENS.labels(model, "completion").inc(completion)
    LLM_SECONDS.labels(model).observe(seconds)


def count_embedding(kind: str, texts: int, seconds: float) -> None:
    EMBEDDED.labels(kind).inc(texts)
    EMBED_SECONDS.labels(kind).observe(seconds)


def count_cache(kind: str, hits: int, misses: int) -> None:
    if hits:
        CACHE_LOOKUPS.labels(kind, "hit").inc(hits)
    if misses:
        CACHE_LOOKUPS.labels(kind, "miss").inc(misses)


def count_error(code: str, status: int) -> None:
    ERRORS.labels(code, str(status)).inc()


def count_jobs(operation: str, outcome: str, count: int = 1) -> None:
    JOBS.labels(operation, outcome).inc(count)


def count_connector_run(kind: str, outcome: str) -> None:
    CONNECTOR_RUNS.labels(kind, outcome).inc()
