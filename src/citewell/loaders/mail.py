"""E-mail: .eml (stdlib email) and Outlook .msg (OLE2 properties via olefile).

The headers come first, then the body (plain text preferred, else HTML as Markdown), then each
attachment's text under its own heading, extracted by the loader for its format.
"""

from __future__ import annotations

import email
import email.policy
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any

from citewell.errors import CitewellError, ParseError
from citewell.loaders.html import html_to_markdown
from citewell.loaders.legacy import MSG, open_ole
from citewell.types import Document

EML = "message/rfc822"
MAX_ATTACHMENTS = 50
HEADERS = ("Subject", "From", "To", "Cc", "Date")
Read = Callable[[bytes, str], Document]


class EmlLoader:
    mime_types = frozenset({EML})

    def __init__(self, read: Read) -> None:
        self.read = read  # extracts attachments, each by the loader for its own format

    def load(self, data: bytes, name: str) -> Document:
        message = email.message_from_bytes(data, policy=email.policy.default)
        if not isinstance(message, EmailMessage) or not message.keys():
            raise ParseError(f"{name} is not an e-mail message (no headers).")
        try:
            headers = {h: str(message[h]) for h in HEADERS if message[h]}
            body = _body(message)
            attachments = [
                (part.get_filename() or "attachment", _payload(part))
                for part in list(message.iter_attachments())[:MAX_ATTACHMENTS]
                if isinstance(part, EmailMessage)
            ]
        except Exception as exc:  # the stdlib's header parser fails in odd ways on bad input
            raise ParseError(
                f"{name} is a malformed e-mail ({type(exc).__name__}: {exc})."
            ) from exc
        return _email_document(name, EML, headers, body, attachments, self.read)


def _payload(part: EmailMessage) -> bytes:
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):  # unknown charset: read it as Latin-1 rather than fail
        content = _payload(part).decode("latin-1")  # type: ignore[arg-type]
    if part.get_content_subtype() == "html":
        return html_to_markdown(str(content))[0]
    return str(content).replace("\r\n", "\n")


def _email_document(
    name: str,
    mime_type: str,
    headers: dict[str, str],
    body: str,
    attachments: list[tuple[str, bytes]],
    read: Read,
) -> Document:
    title = headers.get("Subject")
    head = [f"# {title}"] if title else []
    head.extend(f"{key}: {value}" for key, value in headers.items() if key != "Subject")
    blocks = ["\n".join(head), body.strip()]
    for filename, payload in attachments:
        blocks.append(f"## Attachment: {filename}\n\n{_attachment_text(filename, payload, read)}")
    return Document("\n\n".join(b for b in blocks if b), name, mime_type, title=title)


def _attachment_text(filename: str, payload: bytes, read: Read) -> str:
    try:
        return read(payload, filename).text
    except CitewellError as exc:
        return f"(not indexed: {exc.message})"


class MsgLoader:
    """Outlook .msg: subject, sender, recipients, plain-text body and attachments."""

    mime_types = frozenset({MSG})

    def __init__(self, read: Read) -> None:
        self.read = read

    def load(self, data: bytes, name: str) -> Document:
        ole = open_ole(data, name)
        try:
            return self._document(ole, name)
        except CitewellError:
            raise
        except Exception as exc:  # a damaged stream: olefile raises OSError and more
            raise ParseError(f"{name} is not a readable Outlook message ({exc}).") from exc

    def _document(self, ole: Any, name: str) -> Document:
        headers = {
            "Subject": _msg_string(ole, "", "0037"),
            "From": _msg_string(ole, "", "0C1A") or _msg_string(ole, "", "0065"),
            "To": _msg_string(ole, "", "0E04"),
            "Cc": _msg_string(ole, "", "0E03"),
        }
        body = _msg_string(ole, "", "1000")
        if not body:
            html = _msg_binary(ole, "", "1013")
            body = html_to_markdown(html.decode("utf-8", errors="replace"))[0] if html else ""
        attachments = []
        folders = sorted({s[0] for s in ole.listdir() if s[0].startswith("__attach_version1.0")})
        for folder in folders[:MAX_ATTACHMENTS]:
            filename = _msg_string(ole, folder, "3707") or _msg_string(ole, folder, "3704")
            attachments.append((filename or "attachment", _msg_binary(ole, folder, "3701")))
        headers = {k: v for k, v in headers.items() if v}
        return _email_document(name, MSG, headers, body, attachments, self.read)


def _msg_string(ole: Any, folder: str, prop: str) -> str:
    """A string property: UTF-16 (type 001F) or 8-bit (type 001E)."""
    prefix = f"{folder}/" if folder else ""
    for kind, encoding in (("001F", "utf-16-le"), ("001E", "cp1252")):
        stream = f"{prefix}__substg1.0_{prop}{kind}"
        if ole.exists(stream):
            return str(ole.openstream(stream).read().decode(encoding, errors="replace"))
    return ""


def _msg_binary(ole: Any, folder: str, prop: str) -> bytes:
    stream = f"{folder}/__substg1.0_{prop}0102" if folder else f"__substg1.0_{prop}0102"
    return bytes(ole.openstream(stream).read()) if ole.exists(stream) else b""
