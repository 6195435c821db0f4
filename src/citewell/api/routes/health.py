from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from citewell.api.deps import CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.services.stats import readiness

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
    "off" while it reads afresh (on PostgreSQL: no change notifications reach it)."""
    if request.app.state.drain.draining:
        return JSONResponse({"status": "draining"}, status_code=503)
    return {"status": "ready", "caches": readiness(app)}
