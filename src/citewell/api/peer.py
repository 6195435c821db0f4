"""The address that connected, kept apart from the client address X-Forwarded-For gives.

Uvicorn's own proxy-header handling rewrites the client address before the app sees the
connection, and the trusted-header sign-in must know the proxy itself. So ``citewell
serve`` turns uvicorn's off and the app does it: ``KeepPeer`` (outermost) notes the peer,
then uvicorn's ``ProxyHeadersMiddleware`` rewrites the client as before, for the same
addresses (forwarded_allow_ips)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from citewell.auth.identity.header import PEER


class KeepPeer:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            client = scope.get("client")
            scope[PEER] = client[0] if client else ""
        await self.app(scope, receive, send)


def peer_of(request: Request) -> str:
    """The connecting address (a proxy's, when one is in front)."""
    found = request.scope.get(PEER)
    if isinstance(found, str):
        return found
    return request.client.host if request.client else ""


def install(app: FastAPI, forwarded_allow_ips: str) -> None:
    """Last of the middleware to be added: these two run first."""
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=forwarded_allow_ips)  # type: ignore[arg-type]
    app.add_middleware(KeepPeer)
