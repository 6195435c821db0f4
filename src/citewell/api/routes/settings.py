"""The settings: every one for admins to read (secrets masked), and those that change while
the server runs (retrieval, reranking, chunking, prompts) for admins to change, under Open
WebUI's routes and names (GET/POST /api/v1/retrieval/config). The rest are for the config
file or the environment, read at start-up."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import BaseModel

from citewell.api.deps import AdminDep, AuditDep, CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.app import Citewell
from citewell.config import masked_settings
from citewell.live_settings import OPEN_WEBUI_NAMES, RUNTIME_SETTINGS, runtime_changes

router = APIRouter(prefix="/api/v1", tags=["settings"], route_class=OffLoopJsonRoute)


UPDATE_EXAMPLES = [{"TOP_K": 5, "RELEVANCE_THRESHOLD": 0.2}, {"settings": {"top_k": 5}}]


class SettingsReset(BaseModel):
    names: list[str] | None = None  # None: every setting changed at run time


@router.get("/settings")
def effective_settings(_: AdminDep, app: CitewellDep) -> dict[str, Any]:
    """Every setting as this server runs with it; API keys and URL passwords masked."""
    return masked_settings(app.settings)


def _runtime_config(app: Citewell) -> dict[str, Any]:
    tuned = app.live.current
    shown = masked_settings(tuned.settings)
    start = masked_settings(app.live.start)
    return {
        "status": True,
        **{owui: shown[name] for owui, name in OPEN_WEBUI_NAMES.items()},
        "settings": {name: shown[name] for name in RUNTIME_SETTINGS},
        "changed": sorted(tuned.changed),
        "start": {name: start[name] for name in sorted(tuned.changed)},
    }


@router.get("/retrieval/config")
def runtime_config(_: AdminDep, app: CitewellDep) -> dict[str, Any]:
    """The settings that change without a restart: under Open WebUI's names at the top
    level, under Citewell's in ``settings``; ``changed`` lists those set at run time and
    ``start`` their values from the environment or config file."""
    return _runtime_config(app)


@router.post("/retrieval/config/update")
def update_runtime_config(
    access: AdminDep,
    app: CitewellDep,
    audit: AuditDep,
    body: Annotated[dict[str, Any], Body(examples=UPDATE_EXAMPLES)],
) -> dict[str, Any]:
    """Change settings at once, for every process on this database and across restarts.
    Keys are Open WebUI's (``TOP_K``) or Citewell's (``top_k``, also under ``settings``);
    values equal to those in force change nothing. All or none are applied: one invalid
    value refuses the lot. Chunking changes apply to files ingested from now on."""
    changed = app.live.update(runtime_changes(body), access.user_id)
    if changed:
        audit.record(access, "settings.update", "settings", "runtime", names=changed)
    return _runtime_config(app)


@router.post("/retrieval/config/reset")
def reset_runtime_config(
    access: AdminDep, app: CitewellDep, audit: AuditDep, body: SettingsReset | None = None
) -> dict[str, Any]:
    """Back to the values from the environment or config file: of ``names``, or of every
    setting changed at run time when none are given."""
    names = body.names if body else None
    app.live.reset(names)
    audit.record(access, "settings.reset", "settings", "runtime", names=names or "all")
    return _runtime_config(app)
