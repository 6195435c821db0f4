"""Sharing knowledge bases (their owner and admins), and the audit trail (admins)."""

from __future__ import annotations

from fastapi import APIRouter, Query, status

from citewell.api.auth_schemas import AuditEventPublic, GrantCreate, GrantPublic
from citewell.api.deps import AdminDep, AuditDep, AuthDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.errors import Conflict

NOT_BY_NAME = (
    "It is shared with you through a group or with everyone, not by your name; only its "
    "owner or an admin can remove that share."
)

router = APIRouter(prefix="/api/v1", tags=["sharing"], route_class=OffLoopJsonRoute)


@router.get("/knowledge/{kb_id}/grants")
def list_grants(kb_id: str, view: ViewDep, auth: AuthDep) -> list[GrantPublic]:
    """Who besides the owner may read or change the KB."""
    kb = view.managed_kb(kb_id)
    return [GrantPublic.of(g) for g in auth.grants.grants(kb.id)]


@router.put("/knowledge/{kb_id}/grants")
def set_grant(
    kb_id: str, body: GrantCreate, view: ViewDep, auth: AuthDep, audit: AuditDep
) -> GrantPublic:
    """Share the KB: 'user:NAME', 'group:NAME' or 'public' (every signed-in user) may read,
    or read and write (add and remove files). Setting it again changes the permission.
    Only admins learn whether a name exists: for others a grant to a name nobody has is
    answered and listed like any other, and gives no one access."""
    kb = view.managed_kb(kb_id)
    by_name = not view.access.is_admin
    grant = auth.grants.grant(kb.id, body.principal, body.permission, by_name=by_name)
    audit.record(
        view.access,
        "grant.set",
        "knowledge_base",
        kb.id,
        principal=grant.principal,
        permission=grant.permission,
    )
    return GrantPublic.of(grant)


@router.delete("/knowledge/{kb_id}/grants/{principal}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_grant(kb_id: str, principal: str, view: ViewDep, auth: AuthDep, audit: AuditDep) -> None:
    """Stop sharing the KB with ``principal``; or, as the user it was shared with by name
    ('user:YOUR_NAME'), decline the share."""
    if view.access.is_named(principal):
        kb = view.kb(kb_id)
        if not view.access.can_manage(kb):
            if not auth.grants.decline(kb.id, view.access.user_id):
                raise Conflict(NOT_BY_NAME)
            audit.record(view.access, "grant.decline", "knowledge_base", kb.id)
            return
    kb = view.managed_kb(kb_id)
    auth.grants.revoke(kb.id, principal, by_name=not view.access.is_admin)
    audit.record(view.access, "grant.revoke", "knowledge_base", kb.id, principal=principal)


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
