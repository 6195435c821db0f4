"""Dependencies: the app objects built once at start-up, and the caller's access, handed to
routes by type."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from citewell.answer.chat import ChatPipeline
from citewell.api.peer import peer_of
from citewell.api.security import Authenticator
from citewell.app import Citewell
from citewell.auth.access import Access
from citewell.auth.audit import AuditLog
from citewell.engine.scoped import Scoped
from citewell.services.accounts import AccountService, require_admin
from citewell.services.answers import AnswerService
from citewell.services.sign_in import SignInService
from citewell.tracing import leaf_span


async def get_citewell(request: Request) -> Citewell:
    return request.app.state.citewell  # type: ignore[no-any-return]


async def get_chat(request: Request) -> ChatPipeline:
    return request.app.state.chat  # type: ignore[no-any-return]


async def get_authenticator(request: Request) -> Authenticator:
    return request.app.state.auth  # type: ignore[no-any-return]


async def get_audit(request: Request) -> AuditLog:
    return request.app.state.audit  # type: ignore[no-any-return]


# The dependencies above and below only look things up: they are async so that FastAPI calls
# them on the event loop instead of sending each to a worker thread (a hop per dependency).
bearer = HTTPBearer(auto_error=False, description="A Citewell API key (cw_…).")


async def get_access(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Access:
    """The caller, from 'Authorization: Bearer <key>'; 401 without. Cached per request, so
    routes and routers can both depend on it. Answered on the event loop when keys, grants
    and the rate limit are all in memory (most requests): a trip to a worker thread and
    back costs more than the answer."""
    auth: Authenticator = request.app.state.auth
    key = credentials.credentials if credentials is not None else None
    peer = peer_of(request)
    with leaf_span("authenticate"):
        held = auth.held_access(key, request.headers, peer)
        if held is not None:
            return held
        return await run_in_threadpool(auth.access, key, request.headers, peer)


async def get_recheck(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Callable[[], Access | None]:
    """For long-lived responses: the caller's access as it stands now (None: the key or the
    user was revoked since), to be called again while the response runs."""
    auth: Authenticator = request.app.state.auth
    key = credentials.credentials if credentials is not None else None
    return partial(auth.current_access, key, dict(request.headers), peer_of(request))


async def admin_access(access: Annotated[Access, Depends(get_access)]) -> Access:
    return require_admin(access)


async def get_view(
    app: Annotated[Citewell, Depends(get_citewell)],
    access: Annotated[Access, Depends(get_access)],
) -> Scoped:
    """Citewell as this caller sees it: the only way routes reach KBs, files and chunks."""
    return Scoped(app, access)


async def get_accounts(
    app: Annotated[Citewell, Depends(get_citewell)],
    auth: Annotated[Authenticator, Depends(get_authenticator)],
    audit: Annotated[AuditLog, Depends(get_audit)],
    access: Annotated[Access, Depends(get_access)],
) -> AccountService:
    """Users, groups and keys as this caller may see and change them."""
    return AccountService(auth.users, auth.grants, audit, app.settings.access, access)


async def get_sign_in(
    request: Request,
    app: Annotated[Citewell, Depends(get_citewell)],
    auth: Annotated[Authenticator, Depends(get_authenticator)],
    audit: Annotated[AuditLog, Depends(get_audit)],
) -> SignInService:
    methods = request.app.state.identity
    return SignInService(auth.users, auth.grants, audit, app.settings.access, methods)


async def get_answers(
    request: Request, view: Annotated[Scoped, Depends(get_view)]
) -> AnswerService:
    """Answers (and the models to name) as this caller may have them."""
    return AnswerService(request.app.state.chat, request.app.state.models, view)


CitewellDep = Annotated[Citewell, Depends(get_citewell)]
ViewDep = Annotated[Scoped, Depends(get_view)]
ChatDep = Annotated[ChatPipeline, Depends(get_chat)]
AccessDep = Annotated[Access, Depends(get_access)]
AdminDep = Annotated[Access, Depends(admin_access)]
AuditDep = Annotated[AuditLog, Depends(get_audit)]
AuthDep = Annotated[Authenticator, Depends(get_authenticator)]
RecheckDep = Annotated[Callable[[], Access | None], Depends(get_recheck)]
AccountsDep = Annotated[AccountService, Depends(get_accounts)]
SignInDep = Annotated[SignInService, Depends(get_sign_in)]
AnswersDep = Annotated[AnswerService, Depends(get_answers)]
