"""Signing in, who am I, and one's own API keys."""

from __future__ import annotations

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
from citewell.api.deps import AccountsDep, SignInDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.auth.throttle import LoginThrottle
from citewell.errors import Unauthenticated

router = APIRouter(prefix="/api/v1/auth", tags=["auth"], route_class=OffLoopJsonRoute)


@router.post("/login")
async def login(body: LoginCreate, request: Request, accounts: SignInDep) -> SessionPublic:
    """Sign in with a name and password: a key that expires after session_hours."""
    throttle: LoginThrottle = request.app.state.login_throttle
    address = request.client.host if request.client else ""
    accounts.require_sign_in()
    throttle.check(body.name, address)
    done = await run_in_threadpool(accounts.sign_in, body.name, body.password)
    if done is None:
        throttle.failed(body.name, address)
        raise Unauthenticated("Wrong name or password, or the account is disabled.")
    throttle.succeeded(body.name, address)
    user = UserPublic.of(done.user)
    return SessionPublic(api_key=done.plain, expires_at=int(done.expires_at), user=user)


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
def list_keys(accounts: AccountsDep) -> list[ApiKeyPublic]:
    """Your API keys (never the keys themselves)."""
    return [ApiKeyPublic.of(k) for k in accounts.own_keys()]


@router.post("/keys", status_code=status.HTTP_201_CREATED)
def create_key(body: ApiKeyCreate, view: ViewDep, accounts: AccountsDep) -> ApiKeyCreated:
    """A new key for yourself, optionally limited to some KBs (that you may read) and to
    reading. The key is in this answer only."""
    key, plain = accounts.create_key(
        body.name, body.knowledge_bases, body.read_only, lambda kb: view.kb(kb).id
    )
    return ApiKeyCreated(**ApiKeyPublic.of(key).model_dump(), key=plain)


@router.delete("/keys/{key_id}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_key(key_id: str, accounts: AccountsDep) -> None:
    """Revoke one of your keys (admins: anyone's). It stops working at once."""
    accounts.revoke_key(key_id)
