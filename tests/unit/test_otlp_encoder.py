"""The lean OTLP encoder writes what the SDK's encoder writes: decoded with the official
protobuf classes, the two requests are equal, for every kind of span and value we send."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as sdk_encode
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from citewell.tracing.leaves import LeafSpans, expanded
from citewell.tracing.otlp import LeanOtlpExporter, encode_spans

pytestmark = pytest.mark.unit


def _spans() -> list:
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    provider = TracerProvider(resource=Resource.create({"service.name": "citewell", "n": 3}))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("citewell", "1.2")
    remote = trace.SpanContext(7, 9, True, trace.TraceFlags(1))
    parent = trace.set_span_in_context(trace.NonRecordingSpan(remote))
    with tracer.start_as_current_span("POST /chat", context=parent, kind=SpanKind.SERVER) as span:
        span.set_attributes({"s": "é", "t": True, "f": False, "i": -5, "big": 2**40, "x": 0.25})
        span.set_attribute("names", ["a", "b"])
        span.set_attribute("counts", [1, 2, 3])
        span.add_event("first token", {"tokens": 1})
        span.set_status(Status(StatusCode.ERROR, "upstream 502"))
        with tracer.start_as_current_span("tool", kind=SpanKind.CLIENT, links=[Link(remote)]):
            LeafSpans(processor, provider).add("vector", 10, 20, {"k": 8})
    _buffered(LeafSpans(processor, provider))
    other = TracerProvider().get_tracer("other")  # a second resource and scope
    with other.start_as_current_span("empty") as span:
        pass
    return [*exporter.get_finished_spans(), span]


def _buffered(leaves: LeafSpans) -> None:
    """A request's bundle: a root continuing a remote caller (with trace state), a failed
    deferred span, leaves with and without attributes."""
    caller = propagate.extract(
        {"traceparent": f"00-{'1f' * 16}-{'2e' * 8}-01", "tracestate": "vendor=a,other=b"}
    )
    with leaves.root("POST", SpanKind.SERVER, {"url.path": "/q", "n": [1.5, 2.5]}, caller) as root:
        with pytest.raises(ValueError), leaves.deferred("retrieve", {"k": 8}):
            leaves.add("embed", 30, 40)
            raise ValueError
        leaves.add("authenticate", 50, 60, {"cached": True})
        root.update_name("POST /q")
        root.set_attribute("http.response.status_code", 200)


def test_the_lean_encoding_decodes_to_what_the_sdk_encodes():
    spans = _spans()
    ours = ExportTraceServiceRequest.FromString(encode_spans(spans))
    assert ours == sdk_encode(expanded(spans))
    assert len(ours.resource_spans) == 2
    names = {s.name for r in ours.resource_spans for ss in r.scope_spans for s in ss.spans}
    assert names == {"POST /chat", "tool", "vector", "empty", "POST /q", "retrieve", "embed"} | {
        "authenticate"
    }


class _Receiver(BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802
        _Receiver.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_the_exporter_posts_the_lean_encoding_through_the_sdk_client():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        exporter = LeanOtlpExporter(endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces")
        assert exporter._client is not None  # the installed SDK has the client we reuse
        spans = _spans()
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        assert ExportTraceServiceRequest.FromString(_Receiver.bodies[-1]) == sdk_encode(
            expanded(spans)
        )
    finally:
        server.shutdown()
        server.server_close()
