"""Spans made without the SDK's per-span bookkeeping, for the stages of a request: the SDK's
path (start a span, end it, hand over a ReadableSpan) costs about 60 µs a span on a CI
machine, and a search has eight per request (benchmarks/observability_overhead.py).

A request's root and its deferred spans are *buffered*: while a block runs, a
non-recording span with its own id is current (so whatever starts inside is its child, and
logs and ``traceparent`` name it), and every span that ends under it is a plain tuple
appended to one list. When the root ends, the list goes to the span processor as one item
(a ``SpanBundle``), which the lean OTLP encoder writes without building a span object.
A leaf (a block in which no other span starts) is one tuple. Under a live SDK span (a
chat's stages) a deferred span starts a bundle of its own.

Sampling: the root asks the provider's sampler (OTEL_TRACES_SAMPLER); everything below
follows its parent's decision."""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from opentelemetry import context, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import AttributeValue

SCOPE = InstrumentationScope("citewell")
SAMPLED, NOT_SAMPLED = TraceFlags(TraceFlags.SAMPLED), TraceFlags(TraceFlags.DEFAULT)
UNSET = Status(StatusCode.UNSET)
INTERNAL = SpanKind.INTERNAL

# A finished span: (name, span id, parent's span id or 0, parent is remote, kind, start
# and end in ns since the epoch, attributes or None, status).
Record = tuple[str, int, int, bool, SpanKind, int, int, "dict[str, Any] | None", Status]


class SpanBundle:
    """The finished spans of one trace, as one item for the span processor (which reads
    ``context`` to see that it is sampled, as it does for a span)."""

    __slots__ = ("context", "records", "resource")

    def __init__(self, context: trace.SpanContext, resource: Resource, records: list[Record]):
        self.context, self.resource, self.records = context, resource, records

    def spans(self) -> list[ReadableSpan]:
        """The same spans as the SDK's objects: for its encoder and in-memory exporters."""
        trace_id, flags, state = self.context.trace_id, SAMPLED, self.context.trace_state
        return [
            ReadableSpan(
                name=name,
                context=trace.SpanContext(trace_id, span_id, False, flags, state),
                parent=trace.SpanContext(trace_id, parent, remote, flags, state)
                if parent
                else None,
                resource=self.resource,
                attributes=attributes,
                kind=kind,
                status=status,
                start_time=start,
                end_time=end,
                instrumentation_scope=SCOPE,
            )
            for name, span_id, parent, remote, kind, start, end, attributes, status in self.records
        ]


def expanded(items: Iterable[ReadableSpan | SpanBundle]) -> list[ReadableSpan]:
    """Bundles opened into the SDK's span objects; spans as they are."""
    spans: list[ReadableSpan] = []
    for item in items:
        spans.extend(item.spans() if isinstance(item, SpanBundle) else [item])
    return spans


class BufferedSpan(trace.NonRecordingSpan):
    """The current span while a root or deferred span's block runs: it takes a name,
    attributes and a status like a live span, and ``records`` collects what ends under it."""

    def __init__(
        self, own: trace.SpanContext, name: str, attributes: dict[str, Any], records: list[Record]
    ) -> None:
        super().__init__(own)
        self.span_id, self.name, self.attributes = own.span_id, name, attributes
        self.status: Status = UNSET
        self.records: list[Record] | None = records  # None once handed over

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        self.attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        self.attributes.update(attributes)

    def update_name(self, name: str) -> None:
        self.name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        self.status = status if isinstance(status, Status) else Status(status, description)


class LeafSpans:
    def __init__(self, processor: SpanProcessor, provider: TracerProvider) -> None:
        self.processor, self.resource = processor, provider.resource
        self.sampler, self.ids = provider.sampler, provider.id_generator

    def add(
        self, name: str, start: int, end: int, attributes: dict[str, Any] | None = None
    ) -> None:
        """A finished child of the current span, if that one is sampled."""
        current = trace.get_current_span()
        records = getattr(current, "records", None)
        if records is not None:  # under a root or deferred span: one more tuple
            above = current.span_id  # type: ignore[attr-defined]
            records.append((name, _new_id(), above, False, INTERNAL, start, end, attributes, UNSET))
            return
        parent = current.get_span_context()
        if parent.is_valid and parent.trace_flags.sampled:  # under a live span
            record = (name, _new_id(), parent.span_id, parent.is_remote, INTERNAL, start, end)
            self._hand_over(parent, [(*record, attributes, UNSET)])

    def add_marks(self, marks: Iterable[tuple[str, int, int]]) -> None:
        """``add`` for each (name, start, end): stages timed on other threads."""
        current = trace.get_current_span()
        records = getattr(current, "records", None)
        if records is None:
            for name, start, end in marks:
                self.add(name, start, end)
            return
        above = current.span_id  # type: ignore[attr-defined]
        records.extend(
            (name, _new_id(), above, False, INTERNAL, start, end, None, UNSET)
            for name, start, end in marks
        )

    def deferred(self, name: str, attributes: dict[str, Any]) -> AbstractContextManager[Span]:
        current = trace.get_current_span()
        parent = current.get_span_context()
        if not (parent.is_valid and parent.trace_flags.sampled):
            return nullcontext(trace.INVALID_SPAN)  # takes attributes and keeps none
        records = getattr(current, "records", None)
        own = trace.SpanContext(parent.trace_id, _new_id(), False, SAMPLED, parent.trace_state)
        span = BufferedSpan(own, name, attributes, [] if records is None else records)
        return _Block(self, span, parent, INTERNAL, records is None, None)

    def root(
        self, name: str, kind: SpanKind, attributes: dict[str, Any], caller: context.Context
    ) -> AbstractContextManager[Span]:
        """A buffered span that starts a trace, or continues the caller's (its context from
        ``traceparent``): what the SDK's own span would be, at a fraction of its cost."""
        parent = trace.get_current_span(caller).get_span_context()
        trace_id = parent.trace_id if parent.is_valid else self.ids.generate_trace_id()
        decision = self.sampler.should_sample(caller, trace_id, name, kind, attributes)
        flags = SAMPLED if decision.decision is Decision.RECORD_AND_SAMPLE else NOT_SAMPLED
        own = trace.SpanContext(trace_id, _new_id(), False, flags, decision.trace_state)
        if not flags.sampled:  # logs and outgoing calls still carry its ids
            return _Block(self, trace.NonRecordingSpan(own), parent, kind, False, caller)
        span = BufferedSpan(own, name, {**attributes, **dict(decision.attributes or {})}, [])
        return _Block(self, span, parent, kind, True, caller)

    def finish(
        self,
        span: BufferedSpan,
        parent: trace.SpanContext,
        start: int,
        kind: SpanKind,
        hand_over: bool,
    ) -> None:
        """The span's record; and its bundle handed over if it began one."""
        records = span.records
        assert records is not None
        above, remote = (parent.span_id, parent.is_remote) if parent.is_valid else (0, False)
        end = time.time_ns()
        records.append(
            (span.name, span.span_id, above, remote, kind, start, end, span.attributes, span.status)
        )
        if hand_over:
            span.records = None  # what ends under it later makes a bundle of its own
            self._hand_over(span.get_span_context(), records)

    def _hand_over(self, within: trace.SpanContext, records: list[Record]) -> None:
        self.processor.on_end(SpanBundle(within, self.resource, records))  # type: ignore[arg-type]


class _Block:
    """A buffered span current while its block runs (a class, not a generator: a search
    enters two of these per request); an exception marks it failed, as the SDK's do."""

    __slots__ = ("hand_over", "kind", "leaves", "parent", "span", "start", "token", "within")

    def __init__(
        self,
        leaves: LeafSpans,
        span: trace.NonRecordingSpan,
        parent: trace.SpanContext,
        kind: SpanKind,
        hand_over: bool,
        within: context.Context | None,
    ) -> None:
        self.leaves, self.span, self.parent, self.kind = leaves, span, parent, kind
        self.hand_over, self.within = hand_over, within

    def __enter__(self) -> Span:
        self.token = context.attach(trace.set_span_in_context(self.span, self.within))
        self.start = time.time_ns()
        return self.span if isinstance(self.span, BufferedSpan) else trace.INVALID_SPAN

    def __exit__(self, kind: type[BaseException] | None, error: object, _: object) -> None:
        context.detach(self.token)
        span = self.span
        if not isinstance(span, BufferedSpan):  # not sampled
            return
        if kind is not None:  # the type only: a message may quote what a user sent
            span.set_status(Status(StatusCode.ERROR, kind.__qualname__))
        self.leaves.finish(span, self.parent, self.start, self.kind, self.hand_over)


def _new_id() -> int:
    return random.getrandbits(64) or 1
