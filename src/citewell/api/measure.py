"""Requests counted for /metrics: by method, route template (``/api/v1/knowledge/{kb}``,
never the KB itself) and status, with the time to the end of the answer's body. Outermost,
so refusals by the body limit and the key check count too; paths no route knows count as
one label, so probes cannot grow the label set."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citewell.metrics import count_request

UNMATCHED = "unmatched"


class MeasureRequests:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 500  # a route that dies before answering

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", UNMATCHED)
            count_request(scope["method"], route, status, time.perf_counter() - began)
