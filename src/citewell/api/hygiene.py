"""Request bodies, made safe and cheap before any route sees them.

Text that JSON allows but Python's text handling does not: a lone UTF-16 surrogate
(``"\\ud800"``) decodes to a str that no encoder, tokenizer or database accepts. Every JSON
body is cleaned on the way in: each lone surrogate becomes U+FFFD, the replacement character,
so such text is simply text with an unknown character in it, everywhere at once.

Big bodies (megabytes of JSON) are scanned and parsed in a worker thread, one at a time, so
that a few huge requests never hold the event loop that every other request needs."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import anyio.to_thread
from fastapi import Request
from fastapi.routing import APIRoute
from starlette.datastructures import State
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# A \uD800-\uDFFF escape: only bodies that contain one are parsed here (valid pairs too, which
# pass through unchanged); every other body goes on byte for byte.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
BIG_BODY = 256 * 1024  # bytes of JSON above which work on a body leaves the event loop


def clean_text(text: str) -> str:
    return LONE_SURROGATE.sub("\ufffd", text)


def clean_json(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): clean_json(v) for k, v in value.items()}
    return value


def cleaned_body(body: bytes) -> bytes:
    if not SURROGATE_ESCAPE.search(body):
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body  # not JSON: the route answers 400 for it as for any bad body
    return json.dumps(clean_json(data), ensure_ascii=False).encode("utf-8")


class CleanJsonText:
    """ASGI middleware: non-multipart request bodies are read whole (the body limit outside
    this one bounds them) and handed on with lone surrogates replaced. The body is read when
    the route first asks for it, so a body-limit error still reaches the error handlers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        content_type = dict(scope.get("headers", [])).get(b"content-type", b"")
        if scope["type"] != "http" or content_type.startswith(b"multipart/"):
            await self.app(scope, receive, send)
            return
        pending: list[Message] | None = None

        async def cleaned() -> Message:
            nonlocal pending
            if pending is None:
                pending = await _whole_body(receive, scope["app"].state)
            return pending.pop(0) if pending else await receive()

        await self.app(scope, cleaned, send)


async def _whole_body(receive: Receive, state: State) -> list[Message]:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return [message]  # the client went away
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            body = await off_loop(state, cleaned_body, b"".join(parts))
            return [{"type": "http.request", "body": body, "more_body": False}]


async def off_loop(state: State, work: Any, body: bytes) -> Any:
    """``work(body)``: here for small bodies, else in a worker thread, one big body at a time
    (they all wait for the GIL anyway; one at a time leaves the others' share to requests)."""
    if len(body) < BIG_BODY:
        return work(body)
    limiter = getattr(state, "big_bodies", None)
    if limiter is None:
        limiter = state.big_bodies = anyio.CapacityLimiter(1)
    return await anyio.to_thread.run_sync(work, body, limiter=limiter)


class OffLoopJsonRequest(Request):
    """Parses a big JSON body in a worker thread (FastAPI would parse it on the event loop)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = await off_loop(self.app.state, json.loads, await self.body())
        return self._json


class OffLoopJsonRoute(APIRoute):
    """The route class of every router: requests are ``OffLoopJsonRequest``s."""

    def get_route_handler(self) -> Any:
        handler = super().get_route_handler()

        async def route(request: Request) -> Any:
            return await handler(OffLoopJsonRequest(request.scope, request.receive))

        return route
