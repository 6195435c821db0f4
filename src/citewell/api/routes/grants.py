"""Sharing knowledge bases (their owner and admins), and the audit trail (admins)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, status

from citewell.api.auth_schemas import AuditEventPublic, GrantCreate, GrantPublic
from citewell.api.deps import AdminDep, AuditDep, AuthDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.services.sharing import Shareable, SharingService

router = APIRouter(prefix="/api/v1", tags=["sharing"], route_class=OffLoopJsonRoute)


def kb_sharing(view: ViewDep, auth: AuthDep, audit: AuditDep) -> SharingService:
    def readable(ref: str) -> tuple[str, bool]:
        kb = view.kb(ref)
        return kb.id, view.access.can_manage(kb)

    kbs = Shareable("kb", "knowledge_base", lambda ref: view.managed_kb(ref).id, readable)
    return SharingService(auth.grants, audit, view.access, kbs)


SharingDep = Annotated[SharingService, Depends(kb_sharing)]


@router.get("/knowledge/{kb_id}/grants")
def list_grants(kb_id: str, sharing: SharingDep) -> list[GrantPublic]:
    """Who besides the owner may read or change the KB."""
    _, grants = sharing.grants(kb_id)
    return [GrantPublic.of(g) for g in grants]


@router.put("/knowledge/{kb_id}/grants")
def set_grant(kb_id: str, body: GrantCreate, sharing: SharingDep) -> GrantPublic:
    """Share the KB: 'user:NAME', 'group:NAME' or 'public' (every signed-in user) may read,
    or read and write (add and remove files). Setting it again changes the permission.
    Only admins learn whether a name exists: for others a grant to a name nobody has is
    answered and listed like any other, and gives no one access."""
    _, grant = sharing.share(kb_id, body.principal, body.permission)
    return GrantPublic.of(grant)


@router.delete("/knowledge/{kb_id}/grants/{principal}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_grant(kb_id: str, principal: str, sharing: SharingDep) -> None:
    """Stop sharing the KB with ``principal``; or, as the user it was shared with by name
    ('user:YOUR_NAME'), decline the share."""
    sharing.unshare(kb_id, principal)


@router.get("/audit")
def audit_events(
    _: AdminDep,
    audit: AuditDep,
    limit: int = Query(100, ge=1, le=1000),
    action: str | None = Query(None, max_length=50, description="Exact, or a prefix like 'kb.'."),
    actor: str | None = Query(None, max_length=200, description="A user's name or id."),
    since: float | None = Query(None, description="Unix time."),
    before_id: int | None = Query(
        None, ge=1, le=2**62, description="For paging: events older than this id."
    ),
) -> list[AuditEventPublic]:
    """Who created, changed, deleted or shared what, newest first."""
    events = audit.find(limit, action, actor, since, before_id)
    return [AuditEventPublic.of(e) for e in events]
