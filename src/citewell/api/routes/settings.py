"""The effective settings, for admins to read (secrets masked). Changing them is for the
config file or the environment, read at start-up."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from citewell.api.deps import AdminDep, CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.config import masked_settings

router = APIRouter(prefix="/api/v1", tags=["settings"], route_class=OffLoopJsonRoute)


@router.get("/settings")
def effective_settings(_: AdminDep, app: CitewellDep) -> dict[str, Any]:
    """Every setting as this server runs with it; API keys and URL passwords masked."""
    return masked_settings(app.settings)
