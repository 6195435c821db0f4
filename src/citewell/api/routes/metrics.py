"""``GET /metrics``: Prometheus' text format. Who may read it: with ``metrics_token`` set,
only callers sending ``Authorization: Bearer <metrics_token>`` (loopback too: behind a
reverse proxy on the same host every request comes from loopback); without one, requests
from a loopback address."""

from __future__ import annotations

import hmac
import ipaddress

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from citewell.api.deps import CitewellDep
from citewell.errors import Forbidden, Unauthenticated
from citewell.metrics.exposition import scrape
from citewell.services.stats import server_figures

router = APIRouter(tags=["metrics"], include_in_schema=False)


def _from_loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_reader(request: Request, token: str) -> None:
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if token and scheme.lower() == "bearer":
        if hmac.compare_digest(given.strip().encode(), token.encode()):
            return
        raise Unauthenticated("That is not the metrics token (metrics_token).")
    if token:
        raise Unauthenticated(
            "Send the metrics token: Authorization: Bearer <metrics_token>.",
            {"WWW-Authenticate": "Bearer"},
        )
    if _from_loopback(request):
        return
    raise Forbidden(
        "/metrics answers loopback addresses only; set metrics_token to let a Prometheus "
        "elsewhere read it with that token."
    )


@router.get("/metrics")
async def metrics(request: Request, app: CitewellDep) -> Response:
    check_reader(request, app.settings.server.metrics_token)
    body, content_type = await run_in_threadpool(scrape, lambda: server_figures(app))
    return Response(body, media_type=content_type)
