from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from citewell.api.deps import CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.services.stats import copy_on_its_way, readiness

router = APIRouter(tags=["health"], route_class=OffLoopJsonRoute)


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (answered on the event loop: a probe should cost nothing)."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
def readyz(app: CitewellDep, request: Request) -> dict[str, object] | JSONResponse:
    """The catalog and the chunk store answer (no key needed, so nothing about the data);
    503 while the process drains before it stops (shutdown_drain_seconds). ``caches``:
    "on" while this process keeps what requests read until the database says it changed,
    "off" while it reads afresh (on PostgreSQL: no change notifications reach it). 503
    "starting" while the process makes its first copy of a big chunk table
    (``table_copy``: its state), so a balancer sends searches elsewhere until they run
    at the copy's speed."""
    if request.app.state.drain.draining:
        return JSONResponse({"status": "draining"}, status_code=503)
    caches = readiness(app)
    copy = copy_on_its_way(app)
    if copy is not None:
        body = {"status": "starting", "table_copy": copy, "caches": caches}
        return JSONResponse(body, status_code=503)
    return {"status": "ready", "caches": caches}
