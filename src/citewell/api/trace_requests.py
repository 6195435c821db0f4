"""A server span per HTTP request (OpenTelemetry's HTTP semantic conventions), continuing a
caller's trace when it sends ``traceparent``; the trace id goes back in ``X-Trace-Id``, so
"this answer was slow" can be found. Installed only while tracing is on."""

from __future__ import annotations

from opentelemetry import context, propagate
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citewell.tracing import trace_id, tracer

TRACE_HEADER = b"x-trace-id"


class TraceRequests:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        parent = propagate.extract(carrier)
        method = scope["method"]
        attributes = {
            "http.request.method": method,
            "url.path": scope["path"],
            "url.scheme": scope.get("scheme", "http"),
        }
        token = context.attach(parent)
        try:
            with tracer().start_as_current_span(
                method, kind=SpanKind.SERVER, attributes=attributes
            ) as span:
                status = 500
                shown = trace_id().encode()

                async def sending(message: Message) -> None:
                    nonlocal status
                    if message["type"] == "http.response.start":
                        status = int(message["status"])
                        message["headers"] = [*message.get("headers", []), (TRACE_HEADER, shown)]
                    await send(message)

                await self.app(scope, receive, sending)
                route = getattr(scope.get("route"), "path", None)
                if route:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
        finally:
            context.detach(token)
