"""OpenTelemetry traces: one per request and per job, a span per stage. Off unless an OTLP
endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, read
with the settings); then spans go to it over OTLP/HTTP in batches, and the SDK reads the
other standard OTEL_* variables (service name, headers, sampler) itself. While off, the
tracer is OpenTelemetry's no-op one: a span costs a function call.

Spans carry ids, counts, k, models and timings; text (queries, prompts) only with
``trace_content``."""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Tracer

if TYPE_CHECKING:
    from citewell.tracing.leaves import LeafSpans

_lock = threading.Lock()
_tracer: Tracer = trace.NoOpTracer()
_content = False
_leaves: LeafSpans | None = None  # while tracing is on


def tracer() -> Tracer:
    return _tracer


def with_content() -> bool:
    """Whether spans may carry text (queries, prompts): ``trace_content``."""
    return _content


def start_tracing(endpoint: str, traces_endpoint: str, content: bool) -> bool:
    """Export spans over OTLP/HTTP when an endpoint is given; once per process."""
    global _tracer, _content, _leaves  # noqa: PLW0603 (set once, at start-up)
    target = traces_endpoint or (endpoint.rstrip("/") + "/v1/traces" if endpoint else "")
    with _lock:
        if not target or not isinstance(_tracer, trace.NoOpTracer):
            return not isinstance(_tracer, trace.NoOpTracer)
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from citewell.tracing.leaves import LeafSpans
        from citewell.tracing.otlp import LeanOtlpExporter

        provider = TracerProvider(resource=Resource.create({"service.name": "citewell"}))
        processor = BatchSpanProcessor(LeanOtlpExporter(endpoint=target))
        provider.add_span_processor(processor)
        atexit.register(provider.shutdown)  # what is still batched goes out at exit
        _tracer, _content = provider.get_tracer("citewell"), content
        _leaves = LeafSpans(processor, provider)
        return True


def tracing_on() -> bool:
    return not isinstance(_tracer, trace.NoOpTracer)


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Span]:
    """A child of the current span (or a root), current while the block runs."""
    with _tracer.start_as_current_span(name, attributes=_clean(attributes)) as current:
        yield current


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k.replace("__", "."): v for k, v in attributes.items() if v is not None}


def trace_id() -> str:
    """The current trace's id in hex ("" outside a sampled trace)."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


def stage_spans(marks: list[tuple[str, int, int]]) -> None:
    """Spans, under the current one, for stages timed where a span could not be current
    (on other threads, or before anyone knew a trace was wanted)."""
    if _leaves is not None:
        _leaves.add_marks(marks)


def deferred_span(name: str, **attributes: Any) -> AbstractContextManager[Span]:
    """Like ``span`` (attributes may be set on what it yields), at a fifth of its cost: for
    stages under which only leaves, deferred spans and client spans start."""
    if _leaves is None:
        return nullcontext(trace.INVALID_SPAN)
    return _leaves.deferred(name, _clean(attributes))


def leaf_span(name: str) -> AbstractContextManager[None]:
    """A span for a block in which no other span starts: made once the block ends, at a
    tenth of the cost of a live span (what a stage as short as a key check can afford)."""
    return nullcontext() if _leaves is None else _Leaf(_leaves, name)


class _Leaf:
    __slots__ = ("leaves", "name", "start")

    def __init__(self, leaves: LeafSpans, name: str) -> None:
        self.leaves, self.name = leaves, name

    def __enter__(self) -> None:
        self.start = time.time_ns()

    def __exit__(self, *failure: object) -> None:
        self.leaves.add(self.name, self.start, time.time_ns())


def server_span(
    name: str, attributes: dict[str, Any], caller: Context
) -> AbstractContextManager[Span]:
    """The root span of a request (kind SERVER), a child of the caller's span when its
    context (``caller``) holds one; name, attributes and status may be set on what it
    yields until the block ends."""
    if _leaves is None:
        return nullcontext(trace.INVALID_SPAN)
    return _leaves.root(name, trace.SpanKind.SERVER, attributes, caller)


@contextmanager
def job_span(operation: str, jobs: int) -> Iterator[Span]:
    """The root span of a batch of jobs: a trace of its own, whoever queued them."""
    with _tracer.start_as_current_span(
        f"job {operation}", context=Context(), attributes={"operation": operation, "jobs": jobs}
    ) as current:
        yield current
