"""Signing in, who am I, and one's own API keys."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, status
from starlette.concurrency import run_in_threadpool

from citewell.api.auth_schemas import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyPublic,
    LoginCreate,
    MePublic,
    SessionPublic,
    UserPublic,
)
from citewell.api.deps import AccessDep, AuditDep, AuthDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.auth import KeyNotFound
from citewell.auth.store import SIGN_IN
from citewell.auth.throttle import LoginThrottle
from citewell.errors import ConfigError, Forbidden, Unauthenticated

router = APIRouter(prefix="/api/v1/auth", tags=["auth"], route_class=OffLoopJsonRoute)


@router.post("/login")
async def login(
    body: LoginCreate, request: Request, auth: AuthDep, audit: AuditDep
) -> SessionPublic:
    """Sign in with a name and password: a key that expires after session_hours."""
    settings = request.app.state.citewell.settings
    if not auth.required:
        raise ConfigError("The server runs with auth=none: no sign-in needed (nor possible).")
    throttle: LoginThrottle = request.app.state.login_throttle
    address = request.client.host if request.client else ""
    throttle.check(body.name, address)
    user = await run_in_threadpool(auth.users.authenticate, body.name, body.password)
    if user is None:
        throttle.failed(body.name, address)
        raise Unauthenticated("Wrong name or password, or the account is disabled.")
    throttle.succeeded(body.name, address)
    expires = time.time() + settings.access.session_hours * 3600
    key, plain = auth.users.create_key(
        user.id, SIGN_IN, expires_at=expires, max_live=settings.access.max_keys_per_user
    )
    access = auth.grants.access(user, key)
    audit.record(access, "user.login", "user", user.id)
    return SessionPublic(api_key=plain, expires_at=int(expires), user=UserPublic.of(user))


@router.get("/me")
def me(view: ViewDep) -> MePublic:
    """Who the key belongs to, the key's limits, and how many KBs it may read."""
    access = view.access
    return MePublic(
        user=UserPublic.of(access.user) if access.user else None,
        key=ApiKeyPublic.of(access.key) if access.key else None,
        knowledge_bases=len(view.kbs()),
    )


@router.get("/keys")
def list_keys(access: AccessDep, auth: AuthDep) -> list[ApiKeyPublic]:
    """Your API keys (never the keys themselves)."""
    if access.user is None:
        return []
    return [ApiKeyPublic.of(k) for k in auth.users.list_keys(access.user.id)]


@router.post("/keys", status_code=status.HTTP_201_CREATED)
def create_key(body: ApiKeyCreate, view: ViewDep, auth: AuthDep, audit: AuditDep) -> ApiKeyCreated:
    """A new key for yourself, optionally limited to some KBs (that you may read) and to
    reading. The key is in this answer only."""
    access = view.access
    if access.user is None:
        raise ConfigError("The server runs with auth=none: there are no users to own keys.")
    if access.read_only:
        raise Forbidden("A read-only key cannot make keys; use a full key or sign in.")
    kb_ids = [view.kb(name).id for name in body.knowledge_bases]
    if access.scope is not None and not (kb_ids and set(kb_ids) <= access.scope):
        raise Forbidden("A key limited to some KBs can only make keys limited to those KBs.")
    cap = view.app.settings.access.max_keys_per_user
    key, plain = auth.users.create_key(
        access.user.id, body.name, kb_ids, body.read_only, max_live=cap
    )
    audit.record(access, "key.create", "api_key", key.id, name=key.name)
    return ApiKeyCreated(**ApiKeyPublic.of(key).model_dump(), key=plain)


@router.delete("/keys/{key_id}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_key(key_id: str, access: AccessDep, auth: AuthDep, audit: AuditDep) -> None:
    """Revoke one of your keys (admins: anyone's). It stops working at once."""
    key = auth.users.get_key(key_id)
    if access.user is None or (key.user_id != access.user.id and not access.is_admin):
        raise KeyNotFound(f"No API key {key_id!r} of yours; GET /api/v1/auth/keys lists them.")
    auth.users.revoke_key(key.id)
    audit.record(access, "key.revoke", "api_key", key.id)
