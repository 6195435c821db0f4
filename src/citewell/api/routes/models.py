"""Model presets: create, list, read, change, delete and share (as KBs are shared)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, status

from citewell.answer.model_presets import ScopedPresets
from citewell.api.auth_schemas import GrantCreate
from citewell.api.deps import AuditDep, AuthDep, CitewellDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.model_schemas import ModelCreate, ModelPublic, PresetGrantPublic
from citewell.engine.scoped import Scoped
from citewell.services.sharing import Shareable, SharingService

router = APIRouter(prefix="/api/v1/models", tags=["models"], route_class=OffLoopJsonRoute)


async def get_presets(view: ViewDep, app: CitewellDep) -> ScopedPresets:
    return ScopedPresets(view, app.chat)


PresetsDep = Annotated[ScopedPresets, Depends(get_presets)]


@router.get("")
def list_models(presets: PresetsDep) -> list[ModelPublic]:
    """The presets you may use: the model_presets setting's, yours, and those shared with you."""
    return [ModelPublic.of(e) for e in presets.list()]


@router.post("", status_code=status.HTTP_201_CREATED)
def create_model(body: ModelCreate, presets: PresetsDep) -> ModelPublic:
    """A new preset, yours: it appears at /v1/models for you (and whom you share it with)."""
    return ModelPublic.of(presets.create(body.preset()))


@router.get("/{model_id}")
def get_model(model_id: str, presets: PresetsDep) -> ModelPublic:
    """By id, or by model name (yours first)."""
    return ModelPublic.of(presets.get(model_id))


@router.put("/{model_id}")
def update_model(model_id: str, body: ModelCreate, presets: PresetsDep) -> ModelPublic:
    """Replace the preset's fields (its owner, admins and write grants)."""
    return ModelPublic.of(presets.update(model_id, body.preset()))


@router.delete("/{model_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_model(model_id: str, presets: PresetsDep) -> None:
    presets.delete(model_id)


def preset_sharing(presets: PresetsDep, auth: AuthDep, audit: AuditDep) -> SharingService:
    def readable(ref: str) -> tuple[str, bool]:
        entry = presets.get(ref)
        return entry.id, presets.can_manage(entry)

    kind = Shareable("preset", "model", lambda ref: presets.managed(ref).id, readable)
    return SharingService(auth.grants, audit, presets.access, kind)


SharingDep = Annotated[SharingService, Depends(preset_sharing)]


@router.get("/{model_id}/grants")
def list_model_grants(model_id: str, sharing: SharingDep) -> list[PresetGrantPublic]:
    preset, grants = sharing.grants(model_id)
    return [PresetGrantPublic(model_id=preset, principal=g.principal, permission=g.permission)
            for g in grants]  # fmt: skip


@router.put("/{model_id}/grants")
def set_model_grant(model_id: str, body: GrantCreate, sharing: SharingDep) -> PresetGrantPublic:
    """Share the preset: 'read' uses it, 'write' also changes it. As with KBs, only admins
    learn whether a name exists."""
    preset, grant = sharing.share(model_id, body.principal, body.permission)
    return PresetGrantPublic(
        model_id=preset, principal=grant.principal, permission=grant.permission
    )


@router.delete("/{model_id}/grants/{principal}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_model_grant(model_id: str, principal: str, sharing: SharingDep) -> None:
    """Stop sharing the preset; or, as the user it was shared with, decline it."""
    sharing.unshare(model_id, principal)


__all__ = ["Scoped", "router"]
