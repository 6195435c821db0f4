"""Leaf and deferred spans (the cheap kinds): parented like live spans, with the
attributes set on them, and only under a sampled parent."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from citewell import tracing
from citewell.tracing.leaves import LeafSpans

pytestmark = pytest.mark.unit


def _tracing_on(monkeypatch, sampler=None) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    provider = TracerProvider(sampler=sampler) if sampler else TracerProvider()
    provider.add_span_processor(processor)
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("test"))
    monkeypatch.setattr(tracing, "_leaves", LeafSpans(processor, provider.resource))
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
