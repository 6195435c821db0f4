"""Spans handed to the span processor already finished, for stages under which no span of
another kind needs the SDK's own bookkeeping. The SDK's path (start a span, end it) costs
about 30 µs a span here, this one about 6 µs, and a search has several stages per request
(benchmarks/observability_overhead.py).

A leaf is made once its stage is over. A deferred span is current while its block runs
(as a non-recording span with its own id, so spans started inside are its children) and is
handed over when the block ends. Both follow their parent's sampling decision."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

SCOPE = InstrumentationScope("citewell")


class DeferredSpan:
    """What a block may add to its deferred span: attributes (as on a live span)."""

    def __init__(self, attributes: dict[str, Any]) -> None:
        self.attributes = attributes

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value


class LeafSpans:
    def __init__(self, processor: SpanProcessor, resource: Resource) -> None:
        self.processor, self.resource = processor, resource

    def add(
        self, name: str, start: int, end: int, attributes: dict[str, Any] | None = None
    ) -> None:
        """A finished child of the current span, if that one is sampled."""
        parent = trace.get_current_span().get_span_context()
        if parent.is_valid and parent.trace_flags.sampled:
            self._hand_over(name, _child_of(parent), parent, start, end, attributes)

    @contextmanager
    def deferred(self, name: str, attributes: dict[str, Any]) -> Iterator[DeferredSpan]:
        parent = trace.get_current_span().get_span_context()
        deferred = DeferredSpan(attributes)
        if not (parent.is_valid and parent.trace_flags.sampled):
            yield deferred
            return
        own, start = _child_of(parent), time.time_ns()
        try:
            with trace.use_span(trace.NonRecordingSpan(own), end_on_exit=False):
                yield deferred
        finally:
            self._hand_over(name, own, parent, start, time.time_ns(), deferred.attributes)

    def _hand_over(
        self,
        name: str,
        own: trace.SpanContext,
        parent: trace.SpanContext,
        start: int,
        end: int,
        attributes: dict[str, Any] | None,
    ) -> None:
        span = ReadableSpan(
            name=name,
            context=own,
            parent=parent,
            resource=self.resource,
            attributes=attributes,
            start_time=start,
            end_time=end,
            instrumentation_scope=SCOPE,
        )
        self.processor.on_end(span)


def _child_of(parent: trace.SpanContext) -> trace.SpanContext:
    return trace.SpanContext(
        parent.trace_id, random.getrandbits(64) or 1, False, parent.trace_flags
    )
