"""OpenTelemetry traces as an operator gets them: `citewell serve` with the standard
OTEL_EXPORTER_OTLP_ENDPOINT, exporting to an OTLP/HTTP receiver started here (wire-
faithful: it decodes the protobuf the exporter sends). A chat with a builtin tool round is
one trace continuing the caller's traceparent, with a span per stage, parented as the
stages nest, token counts on the LLM spans; a queued ingest is a trace of its own; no span
carries a document's text or the question."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from citewell.testing.processes import free_port
from citewell.testing.served import start_server
from tests.fake_servers import FakeLLMService, serve

pytestmark = pytest.mark.e2e

SECRET = "Zanzibar ferries leave at dawn from the northern quay."
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
CHAT_SPANS = {
    "POST /v1/chat/completions",
    "authenticate",
    "generate queries",
    "gather sources",
    "retrieve",
    "embed",
    "vector",
    "keyword",
    "pack context",
    "tool round",
    "tool query_knowledge_files",
    "chat llama3",
    "POST",
}
PRESETS = [
    {"id": "agentic", "knowledge": ["handbook"], "base_model": "llama3",
     "function_calling": "native"},
]  # fmt: skip


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An OTLP/HTTP trace receiver on 127.0.0.1: (its base URL, the spans it got)."""
    spans: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    spans.extend(_span(s) for s in scope.spans)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", spans
    finally:
        server.shutdown()
        server.server_close()


def _span(span: Any) -> dict[str, Any]:
    return {
        "name": span.name,
        "trace": span.trace_id.hex(),
        "id": span.span_id.hex(),
        "parent": span.parent_span_id.hex(),
        "attributes": {a.key: _value(a.value) for a in span.attributes},
    }


def _wait_for(
    spans: list[dict[str, Any]], trace: str, names: set[str], log: Path
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        mine = [s for s in spans if s["trace"] == trace]
        if names <= {s["name"] for s in mine}:
            return mine
        time.sleep(0.3)
    missing = names - {s["name"] for s in mine}
    # the server's log says why an export failed
    raise AssertionError(f"missing spans {missing}: {mine}\n{log.read_text()[-4000:]}")


def _by_name(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(s for s in spans if s["name"] == name)


def test_a_chat_with_a_tool_round_and_an_ingest_are_traced(tmp_path):
    llm = FakeLLMService()
    with serve(llm) as llm_url, otlp_receiver() as (receiver, spans):
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "CITEWELL_LLM_BASE_URL": llm_url + "/v1",
            "CITEWELL_MODEL_PRESETS": json.dumps(PRESETS),
            "LOG_FORMAT": "json",  # Open WebUI's name
        }
        port = free_port()
        log = tmp_path / "server.log"
        server = start_server(tmp_path / "data", port, env, log=log)
        base = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=base, timeout=120) as client:
                client.post("/api/v1/knowledge", json={"name": "handbook"}).raise_for_status()
                queued = client.post(
                    "/api/v1/knowledge/handbook/files?wait=false",
                    files={"file": ("ferries.md", SECRET.encode())},
                )
                assert queued.status_code == 202, queued.text
                job = queued.json()["id"]
                deadline = time.monotonic() + 120
                while client.get(f"/api/v1/jobs/{job}").json()["state"] != "indexed":
                    assert time.monotonic() < deadline, "the ingest job did not finish"
                    time.sleep(0.3)
                llm.tool_script = [[("query_knowledge_files", {"query": "ferry times"})]]
                answer = client.post(
                    "/v1/chat/completions",
                    json={"model": "agentic", "messages": [
                        {"role": "user", "content": "When do the boats to the island go?"}
                    ]},
                    headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
                )  # fmt: skip
                assert answer.status_code == 200, answer.text
                assert answer.headers["x-trace-id"] == CALLER_TRACE
                # while the server runs: spans go out every OTEL_BSP_SCHEDULE_DELAY
                chat = _wait_for(spans, CALLER_TRACE, CHAT_SPANS, log)
        finally:
            server.terminate()
            server.wait(timeout=60)
        ids = {s["id"]: s for s in chat}
        root = _by_name(chat, "POST /v1/chat/completions")
        assert root["parent"] == CALLER_SPAN  # the caller's trace goes on
        assert root["attributes"]["http.route"] == "/v1/chat/completions"
        assert root["attributes"]["http.response.status_code"] == 200
        assert all(s["parent"] in ids for s in chat if s is not root)  # one tree
        tool = _by_name(chat, "tool query_knowledge_files")
        assert ids[tool["parent"]]["name"] == "tool round"
        assert ids[tool["parent"]]["parent"] == root["id"]
        retrieve = [s for s in chat if s["name"] == "retrieve"]
        assert {ids[s["parent"]]["name"] for s in retrieve} >= {"gather sources"}
        vector = _by_name(chat, "vector")
        assert ids[vector["parent"]]["name"] == "retrieve"
        calls = [s for s in chat if s["name"] == "chat llama3"]
        assert any(s["attributes"]["gen_ai.usage.input_tokens"] > 0 for s in calls)
        assert all(ids[s["parent"]]["name"] == "tool round" for s in calls)
        _check_outgoing(chat, ids, llm)
        _check_log_lines(log)
        jobs = [s for s in spans if s["name"] == "job ingest"]
        assert jobs and all(s["parent"] == "" for s in jobs)  # a trace of its own
        job_trace = _wait_for(spans, jobs[0]["trace"], {"job ingest", "embed", "write"}, log)
        assert _by_name(job_trace, "write")["attributes"]["files"] == 1
        shown = json.dumps([s["attributes"] for s in spans])
        assert "Zanzibar" not in shown and "boats" not in shown


def _check_outgoing(chat: list[dict[str, Any]], ids: dict[str, Any], llm: FakeLLMService) -> None:
    """Each LLM call's HTTP request is a client span, and the LLM server got the trace."""
    posts = [s for s in chat if s["name"] == "POST"]
    assert posts and all(ids[s["parent"]]["name"].startswith("chat ") for s in posts)
    assert {s["attributes"]["server.address"] for s in posts} == {"127.0.0.1"}
    assert {s["attributes"]["http.response.status_code"] for s in posts} == {200}
    assert all(s["attributes"]["url.full"].endswith("/v1/chat/completions") for s in posts)
    sent = [h.get("traceparent", "") for h in llm.headers_seen]
    assert any(CALLER_TRACE in header for header in sent), sent


def _check_log_lines(log: Any) -> None:
    """LOG_FORMAT=json: one object per line; the chat's access line has its trace id."""
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert lines and all({"time", "level", "logger", "message"} <= set(x) for x in lines)
    mine = [x for x in lines if x.get("trace_id") == CALLER_TRACE]
    access = [x for x in mine if x["logger"] == "uvicorn.access"]
    assert [(x["method"], x["path"], x["status"]) for x in access] == [
        ("POST", "/v1/chat/completions", 200)
    ]
    assert "Zanzibar" not in log.read_text()
