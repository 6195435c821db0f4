"""Client spans for outgoing HTTP (OpenTelemetry's HTTP semantic conventions): one per
request an LLM, embedder, reranker, web search, page fetch or connector client sends, so a
slow answer shows which outside service it waited on. Services Citewell is configured to
call (``propagate``) also get ``traceparent``, so their own traces continue Citewell's; a web
page or search provider does not.

While tracing is off a client keeps the transport it was given: no wrapper, no cost."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import httpx
from opentelemetry import propagate
from opentelemetry.trace import SpanKind, Status, StatusCode

from citewell.tracing import tracer, tracing_on


def traced(
    transport: httpx.BaseTransport | None = None, propagate_context: bool = False
) -> httpx.BaseTransport | None:
    """The transport an httpx client should send through (None: httpx's default)."""
    if not tracing_on():
        return transport
    return TracedTransport(transport or httpx.HTTPTransport(), propagate_context)


class TracedTransport(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport, propagate_context: bool) -> None:
        self.inner, self.propagate_context = inner, propagate_context

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        attributes: dict[str, str | int] = {
            "http.request.method": request.method,
            "server.address": url.host,
            "server.port": url.port or (443 if url.scheme == "https" else 80),
            "url.full": _without_secrets(str(url)),
        }
        with tracer().start_as_current_span(
            request.method, kind=SpanKind.CLIENT, attributes=attributes, record_exception=False
        ) as span:
            if self.propagate_context:
                propagate.inject(request.headers)
            try:
                response = self.inner.handle_request(request)
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR))
                raise
            span.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 400:
                span.set_attribute("error.type", str(response.status_code))
                span.set_status(Status(StatusCode.ERROR))
            return response

    def close(self) -> None:
        self.inner.close()


def _without_secrets(url: str) -> str:
    """The URL without its query (web search providers take keys there) or a password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
