"""A server span per HTTP request (OpenTelemetry's HTTP semantic conventions), continuing a
caller's trace when it sends ``traceparent``; the trace id goes back in ``X-Trace-Id``, so
"this answer was slow" can be found. Installed only while tracing is on.

The span is the lean kind (``tracing.server_span``): made once the request is answered,
sampled by the configured sampler; only the headers the propagators read are decoded."""

from __future__ import annotations

from opentelemetry import propagate
from opentelemetry.trace import Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citewell.tracing import server_span, trace_id

TRACE_HEADER = b"x-trace-id"


class TraceRequests:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.propagated = {name.encode("latin-1") for name in propagate.get_global_textmap().fields}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        fields = self.propagated
        carrier = {
            k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"] if k in fields
        }
        method = scope["method"]
        attributes = {
            "http.request.method": method,
            "url.path": scope["path"],
            "url.scheme": scope.get("scheme", "http"),
        }
        with server_span(method, attributes, propagate.extract(carrier)) as span:
            status = 500
            shown = trace_id().encode()

            async def sending(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    message["headers"] = [*message.get("headers", []), (TRACE_HEADER, shown)]
                await send(message)

            failure = ""
            try:
                await self.app(scope, receive, sending)
            except Exception as error:
                failure = type(error).__qualname__
                raise
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                if failure or status >= 500:  # error.type as the HTTP conventions say
                    span.set_attribute("error.type", failure or str(status))
                    span.set_status(Status(StatusCode.ERROR))
