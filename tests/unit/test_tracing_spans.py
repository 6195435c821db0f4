"""Leaf and deferred spans (the cheap kinds): parented like live spans, with the
attributes set on them, and only under a sampled parent."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from citewell import tracing
from citewell.tracing.leaves import LeafSpans, expanded

pytestmark = pytest.mark.unit


class _Opening(InMemorySpanExporter):
    """Keeps what it gets as the SDK's spans (bundles opened)."""

    def export(self, spans):
        return super().export(expanded(spans))


def _tracing_on(monkeypatch, sampler=None) -> InMemorySpanExporter:
    exporter = _Opening()
    processor = SimpleSpanProcessor(exporter)
    provider = TracerProvider(sampler=sampler) if sampler else TracerProvider()
    provider.add_span_processor(processor)
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("test"))
    monkeypatch.setattr(tracing, "_leaves", LeafSpans(processor, provider))
    return exporter


def test_spans_inside_a_deferred_span_are_its_children(monkeypatch):
    exporter = _tracing_on(monkeypatch)
    with tracing.span("request"):
        with tracing.deferred_span("retrieve", k=8) as retrieve:
            with tracing.span("rerank"):
                pass
            tracing.stage_spans([("vector", 10, 20)])
            retrieve.set_attribute("results", 3)
        with tracing.leaf_span("authenticate"):
            pass
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"request", "retrieve", "rerank", "vector", "authenticate"}
    request, retrieve_span = spans["request"], spans["retrieve"]
    assert retrieve_span.parent.span_id == request.context.span_id
    assert spans["rerank"].parent.span_id == retrieve_span.context.span_id
    assert spans["vector"].parent.span_id == retrieve_span.context.span_id
    assert (spans["vector"].start_time, spans["vector"].end_time) == (10, 20)
    assert spans["authenticate"].parent.span_id == request.context.span_id
    assert dict(retrieve_span.attributes) == {"k": 8, "results": 3}
    assert retrieve_span.end_time >= spans["rerank"].end_time
    assert len({s.context.trace_id for s in spans.values()}) == 1


def test_nothing_is_made_under_a_parent_that_is_not_sampled(monkeypatch):
    exporter = _tracing_on(monkeypatch, ALWAYS_OFF)
    with tracing.span("request"):
        with tracing.deferred_span("retrieve") as retrieve:
            retrieve.set_attribute("results", 1)
            tracing.stage_spans([("vector", 1, 2)])
        with tracing.leaf_span("authenticate"):
            pass
    assert exporter.get_finished_spans() == ()


def test_with_tracing_off_the_helpers_cost_nothing_and_make_nothing():
    with tracing.deferred_span("retrieve") as retrieve, tracing.leaf_span("authenticate"):
        retrieve.set_attribute("results", 1)  # the no-op span takes it
        tracing.stage_spans([("vector", 1, 2)])
    assert not tracing.tracing_on()


def test_a_server_span_continues_the_callers_trace_and_parents_what_runs_inside(monkeypatch):
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind, Status, StatusCode

    exporter = _tracing_on(monkeypatch)
    caller = propagate.extract({"traceparent": f"00-{'ab' * 16}-{'cd' * 8}-01"})
    with tracing.server_span("POST", {"url.path": "/x"}, caller) as request:
        assert tracing.trace_id() == "ab" * 16
        with tracing.leaf_span("authenticate"):
            pass
        request.update_name("POST /x")
        request.set_status(Status(StatusCode.ERROR))
    spans = {s.name: s for s in exporter.get_finished_spans()}
    root = spans["POST /x"]
    assert (root.kind, root.status.status_code) == (SpanKind.SERVER, StatusCode.ERROR)
    assert root.parent.span_id == int("cd" * 8, 16) and root.parent.is_remote
    assert spans["authenticate"].parent.span_id == root.context.span_id
    assert dict(root.attributes) == {"url.path": "/x"}
    assert root.start_time <= spans["authenticate"].start_time <= root.end_time


def test_a_server_span_follows_the_sampler_and_starts_a_trace_without_a_caller(monkeypatch):
    from opentelemetry.context import Context

    exporter = _tracing_on(monkeypatch)
    with tracing.server_span("GET", {}, Context()):
        first = tracing.trace_id()
    assert first and exporter.get_finished_spans()[0].parent is None
    dropped = _tracing_on(monkeypatch, ALWAYS_OFF)
    with tracing.server_span("GET", {}, Context()), tracing.leaf_span("authenticate"):
        assert tracing.trace_id() not in ("", first)  # logs still name the request
    assert dropped.get_finished_spans() == ()


def test_a_failing_block_marks_its_span_and_a_late_leaf_is_still_kept(monkeypatch):
    from opentelemetry.context import Context
    from opentelemetry.trace import StatusCode

    exporter = _tracing_on(monkeypatch)
    with tracing.server_span("POST", {}, Context()):
        with pytest.raises(KeyError), tracing.deferred_span("retrieve"):
            raise KeyError("what a user typed")
        outlived = trace.get_current_span()
    with trace.use_span(outlived), tracing.leaf_span("late"):  # after the root was handed over
        pass
    spans = {s.name: s for s in exporter.get_finished_spans()}
    failed = spans["retrieve"].status
    assert (failed.status_code, failed.description) == (StatusCode.ERROR, "KeyError")
    assert spans["late"].parent.span_id == spans["POST"].context.span_id
