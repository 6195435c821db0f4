from __future__ import annotations

from fastapi import APIRouter

from citewell.api.deps import CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.types import ChunkFilter

router = APIRouter(tags=["health"], route_class=OffLoopJsonRoute)


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(app: CitewellDep) -> dict[str, object]:
    """The catalog and the chunk store answer (no key needed, so nothing about the data)."""
    app.catalog.find_kb("")
    app.store.count(ChunkFilter(kb_ids=()))
    return {"status": "ready"}
