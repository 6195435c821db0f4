"""Text that JSON allows but Python's text handling does not: a lone UTF-16 surrogate
(``"\\ud800"``) decodes to a str that no encoder, tokenizer or database accepts. Every JSON
body is cleaned on the way in: each lone surrogate becomes U+FFFD, the replacement character,
so such text is simply text with an unknown character in it, everywhere at once."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# A \uD800-\uDFFF escape: only bodies that contain one are parsed here (valid pairs too, which
# pass through unchanged); every other body goes on byte for byte.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


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
                pending = await _whole_body(receive)
            return pending.pop(0) if pending else await receive()

        await self.app(scope, cleaned, send)


async def _whole_body(receive: Receive) -> list[Message]:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return [message]  # the client went away
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            body = cleaned_body(b"".join(parts))
            return [{"type": "http.request", "body": body, "more_body": False}]
