"""Log lines: text or JSON, each with the trace and span id of the work it belongs to, on
the threads that work runs on; outgoing HTTP as client spans that carry the trace on."""

from __future__ import annotations

import io
import json
import logging
import logging.config

import anyio
import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.concurrency import run_in_threadpool

from citewell import tracing
from citewell.config import Settings
from citewell.tracing.client import traced
from citewell.tracing.logs import JsonLines, TextLines, TraceIds, log_config

pytestmark = pytest.mark.unit


@pytest.fixture
def spans(monkeypatch):
    """Tracing on, with spans kept in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "_tracer", provider.get_tracer("test"))
    return exporter


def _logger(formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(TraceIds())
    logger = logging.getLogger(f"citewell.test.{id(stream)}")
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    return logger, stream


def test_a_line_inside_a_span_carries_its_ids_also_from_a_worker_thread(spans):
    logger, stream = _logger(JsonLines())

    async def request() -> str:
        with tracing.span("request"):
            logger.info("on the loop")
            await run_in_threadpool(logger.info, "in the thread pool")  # as sync routes run
            return tracing.trace_id()

    trace_id = anyio.run(request)
    logger.info("after")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [x.get("trace_id") for x in lines] == [trace_id, trace_id, None]
    assert lines[0]["span_id"] == format(spans.get_finished_spans()[0].context.span_id, "016x")
    assert lines[0]["level"] == "info" and lines[0]["message"] == "on the loop"


def test_json_lines_carry_errors_and_access_fields():
    logger, stream = _logger(JsonLines())
    try:
        raise ValueError("bad input")
    except ValueError:
        logger.exception("it failed")
    access = logging.getLogger("uvicorn.access")
    record = access.makeRecord(
        "uvicorn.access", logging.INFO, "x", 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/healthz", "1.1", 200), None,
    )  # fmt: skip
    logger.handle(record)
    failed, line = (json.loads(x) for x in stream.getvalue().splitlines())
    assert failed["error"]["type"] == "ValueError" and "bad input" in failed["error"]["stack"]
    assert (line["method"], line["path"], line["status"]) == ("GET", "/healthz", 200)
    assert line["message"] == '127.0.0.1:5 - "GET /healthz HTTP/1.1" 200'


def test_text_lines_end_with_the_trace_id_only_inside_a_trace(spans):
    logger, stream = _logger(TextLines())
    logger.info("outside")
    with tracing.span("job"):
        logger.warning("inside")
    outside, inside = stream.getvalue().splitlines()
    assert "trace_id" not in outside and " INFO " in outside
    assert inside.endswith(
        f"trace_id={format(spans.get_finished_spans()[0].context.trace_id, '032x')}"
    )


def test_the_level_and_format_come_from_settings_with_open_webui_names(monkeypatch):
    monkeypatch.setenv("GLOBAL_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("LOG_FORMAT", "json")
    server = Settings.load(None).server
    assert (server.log_level, server.log_format) == ("warning", "json")
    config = log_config(server.log_level, server.log_format)
    assert config["root"]["level"] == "WARNING"
    assert config["formatters"]["lines"]["()"] is JsonLines
    assert config["loggers"]["httpx"]["level"] == "WARNING"  # one line per request: quiet
    root, httpx_logger = logging.getLogger(), logging.getLogger("httpx")
    saved = root.handlers[:], root.level, httpx_logger.level
    try:
        logging.config.dictConfig(log_config("debug", "text"))  # as dictConfig takes it
        assert httpx_logger.level == logging.DEBUG
        assert isinstance(root.handlers[0].formatter, TextLines)
    finally:  # the rest of the tests log as before
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        httpx_logger.setLevel(saved[2])


def test_outgoing_requests_are_client_spans_and_only_services_get_the_trace(spans):
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(503 if request.url.path == "/down" else 200)

    mock = httpx.MockTransport(answer)
    service = httpx.Client(transport=traced(mock, propagate_context=True))
    page = httpx.Client(transport=traced(mock))
    with tracing.span("answer"):
        service.post("http://llm.local:8000/v1/chat?key=secret", json={})
        page.get("https://user:pw@example.org/down")
    llm, site, _root = spans.get_finished_spans()
    assert llm.name == "POST" and llm.kind.name == "CLIENT"
    assert llm.attributes["url.full"] == "http://llm.local:8000/v1/chat"  # no query string
    assert llm.attributes["server.port"] == 8000
    assert llm.attributes["http.response.status_code"] == 200
    assert format(llm.context.trace_id, "032x") in seen[0].headers["traceparent"]
    assert "traceparent" not in seen[1].headers  # a web page learns nothing of the trace
    assert site.attributes["url.full"] == "https://example.org/down"  # no password
    assert site.attributes["error.type"] == "503" and site.status.status_code.name == "ERROR"


def test_with_tracing_off_a_client_keeps_its_own_transport():
    mock = httpx.MockTransport(lambda request: httpx.Response(200))
    assert traced(mock) is mock and traced() is None
