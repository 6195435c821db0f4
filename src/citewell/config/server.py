"""The ``server`` section: the HTTP server: address, limits, workers, observability."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ValidationInfo, field_validator

from citewell.config.fields import Section, setting


class ServerSection(Section):
    """The HTTP server: address, processes, request sizes, the web page."""

    host: str = setting("127.0.0.1", "Address `citewell serve` binds to.")

    port: int = setting(8080, "Port `citewell serve` listens on.", "PORT")

    shutdown_drain_seconds: float = setting(
        0.0,
        "On SIGTERM, keep serving this many seconds while /readyz answers 503, so a load "
        "balancer takes the process out before it stops accepting; then requests in flight "
        "finish (up to 30 s). 0: stop accepting at once. A second SIGTERM stops at once.",
        ge=0,
        le=600,
    )

    keep_alive_seconds: int = setting(
        75,
        "How long `citewell serve` keeps an idle HTTP connection open. Keep it above your "
        "clients' and proxy's own idle limits (httpx 5 s, nginx and AWS load balancers 60 s): "
        "when both sides give up at the same moment, a request sent on the closing "
        "connection fails without an answer (uvicorn's default of 5 s met httpx's 5 s about "
        "once in 120 requests that came after a 5 s pause).",
        gt=0,
        le=3600,
    )

    workers: int = setting(
        1,
        "API processes `citewell serve` runs on its port (`--workers`). With more than one, "
        "rate limits are shared through the database and, on the embedded store, one of "
        "them runs the job worker.",
        ge=1,
        le=64,
    )

    max_upload_bytes: int = setting(
        100 * 1024 * 1024, "Largest file accepted by an upload, in bytes."
    )

    max_request_bytes: int = setting(
        10 * 1024 * 1024,
        "Largest request body that is not a file upload (JSON), in bytes; larger ones get 413.",
    )

    max_upload_request_bytes: int = setting(
        1024 * 1024 * 1024,
        "Largest file-upload request (multipart, every file of a batch together), in bytes.",
    )

    web_ui: bool = setting(
        True,
        "Serve the web page at / (knowledge bases, uploads, chat with clickable citations, "
        "admin). It is a client of the API and needs the same keys; false: API only.",
    )

    cors_allow_origins: str = setting(
        "",
        "Origins browsers may call the API from, separated by ',' or ';' ('*': any). "
        "Empty: no CORS headers, so browsers block other sites' pages from reading answers.",
        "CORS_ALLOW_ORIGIN",
    )

    metrics: bool = setting(
        True,
        "Serve GET /metrics (Prometheus' text format): requests by route and status, "
        "latency, retrieval stages, LLM tokens, embeddings, errors by code, jobs by state "
        "and queue age, connector runs, KBs, files and chunks. Read from a loopback "
        "address, or with metrics_token.",
    )

    metrics_token: str = setting(
        "",
        "A bearer token that lets a Prometheus on another host read /metrics "
        "(Authorization: Bearer <token>). Empty: loopback addresses only. Behind a reverse "
        "proxy on the same host every request looks local: set a token there.",
    )

    otel_endpoint: str = setting(
        "",
        "OTLP/HTTP endpoint (e.g. http://collector:4318) that receives traces, one per "
        "request and per job with a span per stage; empty with otel_traces_endpoint: no "
        "tracing, at no cost. The SDK reads the other OTEL_* variables (OTEL_SERVICE_NAME, "
        "OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER) itself.",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    )

    otel_traces_endpoint: str = setting(
        "",
        "The full URL traces go to (…/v1/traces), when it is not otel_endpoint's.",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    )

    trace_content: bool = setting(
        False,
        "Let spans carry text: queries and the question. Off: ids, counts, k, models and "
        "timings only, never a document's text or a prompt.",
    )

    log_level: Literal["debug", "info", "warning", "error"] = setting(
        "info",
        "Least severe log lines the server writes (to stderr). debug also shows each "
        "outgoing HTTP request and the MCP SDK's own lines.",
        "GLOBAL_LOG_LEVEL",
    )

    log_format: Literal["text", "json"] = setting(
        "text",
        "Log lines as text, or json: one object per line (time, level, logger, message; "
        "method, path and status on access lines). Either way a line written for a "
        "request or job carries its trace_id while tracing is on (otel_endpoint), the id "
        "answers carry in X-Trace-Id.",
        "LOG_FORMAT",
    )

    @field_validator("forwarded_allow_ips", mode="after")
    @classmethod
    def _named_proxies(cls, value: str) -> str:
        if "*" in value:
            raise ValueError(
                "forwarded_allow_ips may not be '*': any client could send X-Forwarded-For "
                "and pass as 127.0.0.1 (reading /metrics, dodging the sign-in throttle). Name "
                "your reverse proxies' addresses or networks, e.g. 127.0.0.1,10.0.0.0/8 "
                "(FORWARDED_ALLOW_IPS, as Open WebUI's Docker image sets it, too)."
            )
        return value

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _owui_log_names(cls, value: Any, info: ValidationInfo) -> Any:
        # Open WebUI writes GLOBAL_LOG_LEVEL=INFO; its LOG_FORMAT is empty for text.
        if not isinstance(value, str):
            return value
        name = value.strip().lower()
        name = {"warn": "warning", "critical": "error"}.get(name, name)
        return name or ("info" if info.field_name == "log_level" else "text")

    forwarded_allow_ips: str = setting(
        "127.0.0.1",
        "Proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses or "
        "networks, comma-separated): the client address of a request through them is the "
        "one they forward (login throttle, /metrics from loopback, logs). Uvicorn's setting "
        "of the name. '*' is refused: any client could then claim any address.",
        "FORWARDED_ALLOW_IPS",
    )

    public_url: str = setting(
        "",
        "The URL people open Citewell at (e.g. https://rag.example.org), for links that "
        "point back to it: MCP results' links to the viewer. Empty: the URL a request came "
        "in on, or http://host:port for `citewell mcp`.",
        "WEBUI_URL",
    )

    mcp_allowed_origins: str = setting(
        "",
        "Browser origins that may call the MCP server at /mcp besides Citewell's own "
        "(public_url, and http://localhost or 127.0.0.1 on any port), separated by ',' or "
        "';'. A request with another Origin header is refused (403), as is, while the server "
        "listens on a loopback address, one whose Host is not a loopback name or "
        "public_url's host (421): what stops DNS rebinding.",
    )

    mcp_stateless: bool = setting(
        False,
        "Answer each MCP request on its own, without sessions: for several processes behind "
        "a load balancer that does not keep a client on one process. Sessions are per "
        "process, so `citewell serve --workers` above 1 turns this on by itself.",
    )

    mcp_result_tokens: int = setting(
        6000,
        "Most tokens (about 4 characters each) one MCP tool result may carry; passages or "
        "lines beyond it are left out, with a note saying how many.",
        ge=500,
    )
