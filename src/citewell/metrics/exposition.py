"""A scrape: every process's counters (summed across processes in multiprocess mode) and
what the database says now."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from citewell.metrics.counters import REGISTRY

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own contract


@dataclass(frozen=True)
class Figures:
    """What a scrape reads from the database."""

    jobs_by_state: dict[str, int]
    oldest_queued_seconds: float
    knowledge_bases: int
    files: int
    chunks: int


class FiguresCollector:
    def __init__(self, read: Callable[[], Figures]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        figures = self.read()
        jobs = GaugeMetricFamily("citewell_jobs", "Jobs by state, now.", labels=["state"])
        for state, count in figures.jobs_by_state.items():
            jobs.add_metric([state], count)
        yield jobs
        yield GaugeMetricFamily(
            "citewell_job_queue_oldest_seconds",
            "How long the oldest queued job has waited (0: none waits).",
            value=figures.oldest_queued_seconds,
        )
        for name, text, value in (
            ("citewell_knowledge_bases", "Knowledge bases.", figures.knowledge_bases),
            ("citewell_files", "Stored files.", figures.files),
            ("citewell_chunks", "Chunks, as the files record them.", figures.chunks),
        ):
            yield GaugeMetricFamily(name, text, value=value)


def scrape(read_figures: Callable[[], Figures]) -> tuple[bytes, str]:
    """(the body, its content type) of GET /metrics."""
    registry = CollectorRegistry()
    if os.environ.get(MULTIPROCESS_ENV):
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    figures = CollectorRegistry()
    figures.register(FiguresCollector(read_figures))  # type: ignore[arg-type]
    return body + generate_latest(figures), CONTENT_TYPE_LATEST
