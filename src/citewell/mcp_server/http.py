"""/mcp on the HTTP server: Streamable HTTP (the SDK's session manager, with sessions and
resumable streams), behind two checks of its own. The Origin and Host headers, against DNS
rebinding: a browser page elsewhere must not drive a local server (mcp_allowed_origins).
Then the API key, as on every API route; the caller's access rides on the request to the
tools (``scope["state"]``), so each tool call is answered for that key, and a session and
its resumable streams belong to the key that opened it (mcp_server.events)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Any, Protocol
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from citewell.answer.chat import ChatPipeline
from citewell.app import Citewell
from citewell.auth.access import Access
from citewell.auth.identity.header import PEER
from citewell.config import Settings
from citewell.errors import CitewellError
from citewell.mcp_server.events import CallerSessions, SessionEvents, caller_token
from citewell.mcp_server.server import Caller, build_mcp_server

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")
STATE_KEY = "citewell_caller"


def _split(value: str) -> list[str]:
    return [v.strip().rstrip("/") for v in value.replace(";", ",").split(",") if v.strip()]


class OriginCheck:
    """Which Host and Origin headers /mcp accepts."""

    def __init__(self, settings: Settings) -> None:
        server = settings.server
        public = urlsplit(server.public_url) if server.public_url else None
        self.hosts: set[str] | None = None  # None: any (the server listens beyond loopback)
        if server.host in LOOPBACK_NAMES:
            self.hosts = set(LOOPBACK_NAMES) | ({public.hostname or ""} if public else set())
        self.origins = set(_split(server.mcp_allowed_origins))
        if public is not None:
            self.origins.add(f"{public.scheme}://{public.netloc}")

    def refusal(self, headers: dict[str, str]) -> tuple[int, str] | None:
        host = urlsplit("//" + headers.get("host", "")).hostname or ""
        if self.hosts is not None and host not in self.hosts and f"[{host}]" not in self.hosts:
            return 421, "This Host is not Citewell's: set public_url to the name clients use."
        origin = headers.get("origin", "").rstrip("/")
        if origin and not self._origin_ok(origin):
            return 403, f"Origin {origin} may not call /mcp: add it to mcp_allowed_origins."
        return None

    def _origin_ok(self, origin: str) -> bool:
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme == "http" and (parts.hostname or "") in LOOPBACK_NAMES


class Keys(Protocol):
    """How API keys (or a trusted proxy's header, or an identity provider's token) are
    checked: the HTTP API's Authenticator."""

    def access(
        self, plain: str | None, headers: Mapping[str, str] | None = None, peer: str = ""
    ) -> Access: ...

    def held_access(
        self, plain: str | None, headers: Mapping[str, str] | None = None, peer: str = ""
    ) -> Access | None: ...


class MCPEndpoint:
    """The ASGI app at /mcp."""

    def __init__(self, app: Citewell, chat: ChatPipeline, keys: Keys) -> None:
        self.keys, self.check = keys, OriginCheck(app.settings)
        self.public_url = app.settings.server.public_url.rstrip("/")
        server = build_mcp_server(app, chat, self._caller)
        settings = app.settings.server
        self.sessions = CallerSessions(
            app=server._lowlevel_server,  # the SDK's own way to serve an MCPServer
            stateless=settings.mcp_stateless or settings.workers > 1,
            event_store=SessionEvents(),  # each session's streams resume after a dropped connection
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.sessions.run():
            yield

    def _caller(self, ctx: Any) -> Caller:
        request = getattr(ctx, "request", None)
        caller = getattr(getattr(request, "state", None), STATE_KEY, None)
        if not isinstance(caller, Caller):
            raise RuntimeError("an MCP request without the caller /mcp checked")
        return caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refused = self.check.refusal(headers)
        if refused is not None:
            await _answer(send, refused[0], {"detail": refused[1], "code": "origin_refused"})
            return
        scheme, _, key = headers.get("authorization", "").partition(" ")
        try:
            plain = (key.strip() if scheme.lower() == "bearer" else "") or None
            # From memory on the event loop when it can be (most requests), as the API does.
            peer = scope.get(PEER) or (scope.get("client") or ("",))[0]
            held = self.keys.held_access(plain, headers, peer)
            check = partial(self.keys.access, plain, headers, peer)
            access = held if held is not None else await run_in_threadpool(check)
        except CitewellError as exc:
            extra = {"www-authenticate": "Bearer"} if exc.status == 401 else {}
            await _answer(send, exc.status, {"detail": str(exc), "code": exc.code}, extra)
            return
        base = self.public_url or f"{scope.get('scheme', 'http')}://{headers.get('host', '')}"
        scope.setdefault("state", {})[STATE_KEY] = Caller(access, base)
        scope["user"] = caller_token(access)  # the session is bound to this caller
        await self.sessions.handle_request(scope, receive, send)


async def _answer(send: Send, status: int, body: dict[str, str], extra: Any = None) -> None:
    headers = [(b"content-type", b"application/json")]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
