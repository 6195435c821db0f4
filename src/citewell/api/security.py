"""Who is calling (API key → Access), how often (rate limit), how much they send (body size)
and which browser origins may read answers (CORS)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

import anyio
from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citewell.api.errors import error_body
from citewell.api.hygiene import CleanJsonText
from citewell.auth.access import Access
from citewell.auth.grants import GrantStore
from citewell.auth.identity.methods import KeylessAccess
from citewell.auth.rate_limit import RateLimiter
from citewell.auth.store import AuthStore
from citewell.config import Settings
from citewell.errors import CitewellError, ConfigError, ContextTooLong, Unauthenticated
from citewell.types import MAX_CHARS_PER_TOKEN

KEY_HELP = (
    "Send an API key as 'Authorization: Bearer cw_…' (the openai SDK's api_key). "
    "Create one with `citewell key create --user NAME`, or sign in at POST /api/v1/auth/login."
)


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_auth_mode(settings: Settings, host: str) -> None:
    """auth=none serves everyone as the admin: only on an address no other machine reaches."""
    if settings.access.auth == "none" and not is_loopback(host):
        raise ConfigError(
            f"auth=none (CITEWELL_AUTH=none) lets anyone who reaches {host} read and delete "
            "every document, so it is allowed only on a loopback address (--host 127.0.0.1). "
            "Remove CITEWELL_AUTH=none and use API keys to serve other machines."
        )


class Authenticator:
    """The caller's access from their API key; or, where the identity settings allow, from
    the trusted proxy's header or the OpenID provider's access token (``keyless``)."""

    def __init__(
        self,
        settings: Settings,
        users: AuthStore,
        grants: GrantStore,
        limiter: RateLimiter,
        keyless: KeylessAccess | None = None,
    ) -> None:
        self.required = settings.access.auth == "required"
        self.users = users
        self.grants = grants
        self.limiter = limiter
        self.keyless = keyless

    def access(
        self, plain: str | None, headers: Mapping[str, str] | None = None, peer: str = ""
    ) -> Access:
        if not self.required:
            return Access.everything()
        user_id = self._keyless_user(plain, headers or {}, peer)
        if user_id is not None:
            user = self.users.kept_user(user_id)
            if user.disabled:
                raise Unauthenticated("This account is disabled; ask an admin to enable it.")
            self.limiter.take(user.id)
            return self.grants.access(user)
        found = self.users.identify(plain) if plain else None
        if found is None:
            reason = "That API key is not valid (revoked, expired or mistyped). " if plain else ""
            raise Unauthenticated(reason + KEY_HELP, {"WWW-Authenticate": "Bearer"})
        user, key = found
        self.limiter.take(user.id)  # per user: more keys buy no more requests
        return self.grants.access(user, key)

    def _keyless_user(self, plain: str | None, headers: Mapping[str, str], peer: str) -> str | None:
        return None if self.keyless is None else self.keyless.user_id(plain, headers, peer)

    def wants_keyless(self, plain: str | None, headers: Mapping[str, str]) -> bool:
        """Whether this request is for ``access`` off the event loop (a header or a token
        to check against the database or the provider)."""
        return self.keyless is not None and self.keyless.applies(plain, headers)

    def current_access(
        self, plain: str | None, headers: Mapping[str, str] | None = None, peer: str = ""
    ) -> Access | None:
        """What the key reaches now, for a long-lived response (an event stream) to check
        again as it goes; None once the key is revoked or expired or its user disabled.
        Takes nothing from the rate limit: the stream was counted when it was opened."""
        if not self.required:
            return Access.everything()
        try:
            user_id = self._keyless_user(plain, headers or {}, peer)
        except CitewellError:
            return None
        if user_id is not None:
            user = self.users.kept_user(user_id)
            return None if user.disabled else self.grants.access(user)
        found = self.users.identify(plain) if plain else None
        return None if found is None else self.grants.access(*found)

    def held_access(
        self, plain: str | None, headers: Mapping[str, str] | None = None, peer: str = ""
    ) -> Access | None:
        """``access`` from memory alone, cheap enough for the event loop; None when any
        part of it needs the database (a new key, a reach not kept, a rate-limit claim),
        and then nothing was taken: call ``access`` in a worker thread."""
        if not self.required:
            return Access.everything()
        if self.wants_keyless(plain, headers or {}):
            return self._held_keyless(plain, headers or {}, peer)
        found = self.users.held_identity(plain) if plain else None
        if found is None:
            return None
        user, key = found
        access = self.grants.held_access(user, key)
        if access is None or not self.limiter.take_held(user.id):
            return None
        return access

    def _held_keyless(
        self, plain: str | None, headers: Mapping[str, str], peer: str
    ) -> Access | None:
        """``held_access`` for a person seen lately through the proxy or with this token."""
        assert self.keyless is not None
        user_id = self.keyless.held(plain, headers, peer)
        user = self.users.held_user(user_id) if user_id is not None else None
        if user is None or user.disabled:
            return None
        access = self.grants.held_access(user)
        if access is None or not self.limiter.take_held(user.id):
            return None
        return access


class BodyLimit:
    """413 for request bodies over the limit, counted as they arrive (a missing or false
    Content-Length does not get past it). Multipart uploads have their own, larger limit."""

    def __init__(
        self, app: ASGIApp, json_limit: int, upload_limit: int, chat_limit: int | None = None
    ) -> None:
        self.app = app
        self.json_limit = json_limit
        self.upload_limit = upload_limit
        self.chat_limit = chat_limit or json_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        multipart = headers.get(b"content-type", b"").startswith(b"multipart/")
        limit = self.upload_limit if multipart else self.json_limit
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(limit, multipart)(scope, receive, send)
            return
        if scope["path"] in CHAT_PATHS and declared.isdigit() and int(declared) > self.chat_limit:
            # More text than the context window could ever hold: refused before it is read,
            # after a pause that costs the server nothing and a client repeating it its pace.
            await anyio.sleep(REFUSAL_PAUSE)
            await error_body(400, _too_long_text(int(declared)), ContextTooLong.code)(
                scope, receive, send
            )
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise HTTPException(413, _too_large_text(limit, multipart))
            return message

        await self.app(scope, counted, send)


CHAT_PATHS = frozenset({"/v1/chat/completions", "/api/v1/rag/chat/completions"})
REFUSAL_PAUSE = 0.25  # seconds before an oversized chat body is refused


def chat_body_limit(settings: Settings) -> int:
    """The largest chat body whose text could fit the context window: each token at most
    MAX_CHARS_PER_TOKEN characters, each at most 6 bytes of JSON (\\uXXXX), plus 64 KiB."""
    return settings.llm.llm_context_window * MAX_CHARS_PER_TOKEN * 6 + 65536


def _too_long_text(size: int) -> str:
    return (
        f"The request has {size:,} bytes: more than the model's context window "
        "(llm_context_window) could hold. Shorten the conversation, or upload long text as a "
        "file (POST /api/v1/knowledge/{kb}/files) and ask about it."
    )


def _too_large_text(limit: int, multipart: bool) -> str:
    setting = "max_upload_request_bytes" if multipart else "max_request_bytes"
    return f"The request body is larger than {limit} bytes ({setting})."


def _too_large(limit: int, multipart: bool) -> Any:
    return error_body(413, _too_large_text(limit, multipart), "payload_too_large")


def install(app: FastAPI, settings: Settings) -> None:
    app.add_middleware(CleanJsonText)  # inside the body limit, which bounds what it reads
    app.add_middleware(
        BodyLimit,
        json_limit=settings.server.max_request_bytes,
        upload_limit=settings.server.max_upload_request_bytes,
        chat_limit=chat_body_limit(settings),
    )
    origins = [o.strip() for o in settings.server.cors_allow_origins.replace(";", ",").split(",")]
    origins = [o for o in origins if o]
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["X-Citewell-Sources", "Retry-After"],  # readable by the page
            allow_credentials=False,  # keys travel in headers, not cookies
        )
