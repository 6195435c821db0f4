"""The settings: every one for admins to read (secrets masked), and those that change while
the server runs (retrieval, reranking, chunking, prompts) for admins to change, under Open
WebUI's routes and names (GET/POST /api/v1/retrieval/config). The rest are for the config
file or the environment, read at start-up."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel

from citewell.api.deps import AdminDep, CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.live_settings import runtime_changes
from citewell.services.settings import SettingsService

router = APIRouter(prefix="/api/v1", tags=["settings"], route_class=OffLoopJsonRoute)


UPDATE_EXAMPLES = [{"TOP_K": 5, "RELEVANCE_THRESHOLD": 0.2}, {"settings": {"top_k": 5}}]


class SettingsReset(BaseModel):
    names: list[str] | None = None  # None: every setting changed at run time


def get_settings_service(app: CitewellDep, access: AdminDep) -> SettingsService:
    return SettingsService.of(app, access)


SettingsDep = Annotated[SettingsService, Depends(get_settings_service)]


@router.get("/settings")
def effective_settings(service: SettingsDep) -> dict[str, Any]:
    """Every setting as this server runs with it; API keys and URL passwords masked."""
    return service.effective()


def _runtime_config(service: SettingsService) -> dict[str, Any]:
    now = service.runtime()
    return {
        "status": True,
        **now.open_webui,
        "settings": now.values,
        "changed": now.changed,
        "start": now.start,
    }


@router.get("/retrieval/config")
def runtime_config(service: SettingsDep) -> dict[str, Any]:
    """The settings that change without a restart: under Open WebUI's names at the top
    level, under Citewell's in ``settings``; ``changed`` lists those set at run time and
    ``start`` their values from the environment or config file."""
    return _runtime_config(service)


@router.post("/retrieval/config/update")
def update_runtime_config(
    service: SettingsDep, body: Annotated[dict[str, Any], Body(examples=UPDATE_EXAMPLES)]
) -> dict[str, Any]:
    """Change settings at once, for every process on this database and across restarts.
    Keys are Open WebUI's (``TOP_K``) or Citewell's (``top_k``, also under ``settings``);
    values equal to those in force change nothing. All or none are applied: one invalid
    value refuses the lot. Chunking changes apply to files ingested from now on."""
    service.update(runtime_changes(body))
    return _runtime_config(service)


@router.post("/retrieval/config/reset")
def reset_runtime_config(service: SettingsDep, body: SettingsReset | None = None) -> dict[str, Any]:
    """Back to the values from the environment or config file: of ``names``, or of every
    setting changed at run time when none are given."""
    service.reset(body.names if body else None)
    return _runtime_config(service)
