"""The loader role: bytes of one source in, a Document (text, pages, title) out."""

from __future__ import annotations

from pathlib import PurePath
from typing import Protocol

from citewell.types import Document


class Loader(Protocol):
    """Turns the bytes of one source into text. ``mime_types`` says what it handles."""

    mime_types: frozenset[str]

    def load(self, data: bytes, name: str) -> Document: ...


EXTENSIONS = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".log": "text/plain",
    ".rst": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".mdx": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "text/html",
    ".pdf": "application/pdf",
}


def sniff(data: bytes, name: str) -> str | None:
    """The MIME type of ``data``: from its content where that is telling, else its extension."""
    head = data[:1024].lstrip()
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    lowered = head[:512].lower()
    # Only a document that *starts* with markup is HTML: Markdown may quote HTML in a fence.
    if lowered.startswith((b"<!doctype html", b"<html")) or (
        lowered.startswith(b"<") and any(t in lowered for t in (b"<html", b"<head", b"<body"))
    ):
        return "text/html"
    by_extension = EXTENSIONS.get(PurePath(name).suffix.lower())
    if by_extension:
        return by_extension
    return "text/plain" if looks_like_text(data) else None


def looks_like_text(data: bytes) -> bool:
    """True when the bytes decode as text (BOM-marked UTF-16/32 included), not binary."""
    sample = data[:4096]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")):
        return True
    if b"\x00" in sample:
        return False
    control = sum(1 for b in sample if b < 9 or 13 < b < 32)
    return control <= len(sample) // 100
