"""Signing in, who am I, and one's own API keys."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from fastapi import APIRouter, Request, status
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from citewell.api.auth_schemas import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyPublic,
    LoginCreate,
    MePublic,
    SessionPublic,
    SignInMethodsPublic,
    TicketCreate,
    UserPublic,
)
from citewell.api.deps import AccountsDep, AuditDep, AuthDep, SignInDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.auth.throttle import LoginThrottle
from citewell.errors import CitewellError, Unauthenticated
from citewell.services.sign_in import DEFAULT_RETURN, SignedIn, sign_out

log = logging.getLogger(__name__)
OIDC_LOGIN = "/api/v1/auth/oidc/login"

router = APIRouter(prefix="/api/v1/auth", tags=["auth"], route_class=OffLoopJsonRoute)


@router.get("/methods")
def methods(accounts: SignInDep) -> SignInMethodsPublic:
    """How people may sign in here: Citewell passwords, LDAP, an OpenID provider, a proxy."""
    offered = accounts.offered()
    return SignInMethodsPublic(
        password=offered.password,
        ldap=offered.ldap,
        oidc=offered.oidc,
        oidc_url=OIDC_LOGIN if offered.oidc else "",
        trusted_header=offered.header,
    )


@router.post("/login")
async def login(body: LoginCreate, request: Request, accounts: SignInDep) -> SessionPublic:
    """Sign in with a name and password, Citewell's own or (method 'ldap') the directory's:
    a key that expires after session_hours. Failures count against the login throttle."""
    throttle: LoginThrottle = request.app.state.login_throttle
    address = request.client.host if request.client else ""
    accounts.require_sign_in()
    throttle.check(body.name, address)
    method = body.method or ("password" if accounts.methods.password else "ldap")
    check = accounts.sign_in if method == "password" else accounts.sign_in_ldap
    done = await run_in_threadpool(check, body.name, body.password)
    if done is None:
        throttle.failed(body.name, address)
        raise Unauthenticated("Wrong name or password, or the account is disabled.")
    throttle.succeeded(body.name, address)
    return _session(done)


@router.get("/oidc/login", response_class=RedirectResponse, status_code=302)
def oidc_login(accounts: SignInDep, return_to: str = DEFAULT_RETURN) -> RedirectResponse:
    """Go to the OpenID provider's sign-in (the browser follows); ``return_to`` is where on
    Citewell's page to come back to."""
    return RedirectResponse(accounts.start_oidc(return_to), status_code=302)


@router.get("/oidc/callback", response_class=RedirectResponse, status_code=302)
def oidc_callback(
    accounts: SignInDep,
    code: str = "",
    state: str = "",
    error: str = "",
    error_description: str = "",
) -> RedirectResponse:
    """Where the provider sends the browser back: on to the page with a one-time ticket, or
    with the code of the reason the sign-in was refused. The page shows a fixed message per
    code: no text of the provider's or the caller's reaches it (it would be shown as
    Citewell's own words)."""
    if error:
        log.info("OIDC provider refused the sign-in: %s %s", error[:100], error_description[:300])
        return _to_page(DEFAULT_RETURN, code="identity_provider_refused")
    try:
        ticket, target = accounts.finish_oidc(code, state)
    except CitewellError as exc:
        log.info("OIDC sign-in refused: %s", exc)
        return _to_page(DEFAULT_RETURN, code=exc.code)
    return _to_page(target, ticket=ticket)


@router.post("/oidc/ticket")
def oidc_ticket(body: TicketCreate, accounts: SignInDep) -> SessionPublic:
    """Trade the callback's one-time ticket for a key (once, within a minute)."""
    return _session(accounts.redeem(body.ticket))


@router.post("/logout", status_code=status.HTTP_204_NO_CONTENT)
def logout(view: ViewDep, audit: AuditDep, auth: AuthDep) -> None:
    """Sign out: the sign-in key this request carries stops working. Keys made for scripts
    are left alone (revoke those with DELETE /api/v1/auth/keys/{id})."""
    sign_out(auth.users, audit, view.access)


def _session(done: SignedIn) -> SessionPublic:
    user = UserPublic.of(done.user)
    return SessionPublic(api_key=done.plain, expires_at=int(done.expires_at), user=user)


def _to_page(target: str, **values: str) -> RedirectResponse:
    """The page at ``target`` (a path with a #/view), the values after the view's '?'."""
    path, _, view = target.partition("#")
    landing = "/signed-in" if "ticket" in values else "/sign-in"
    query = urlencode({**values, "next": view or "/kbs"})
    return RedirectResponse(f"{path or '/'}#{landing}?{query}", status_code=302)


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
