"""The loader role: bytes of one source in, a Document (text, pages, title) out."""

from __future__ import annotations

from collections.abc import Mapping
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
    ".csv": "text/csv",
    ".tsv": "text/csv",
    ".json": "application/json",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".epub": "application/epub+zip",
    ".odt": "application/vnd.oasis.opendocument.text",
    ".rtf": "application/rtf",
    ".doc": "application/msword",
    ".ppt": "application/vnd.ms-powerpoint",
    ".xls": "application/vnd.ms-excel",
    ".eml": "message/rfc822",
    ".msg": "application/vnd.ms-outlook",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".bmp": "image/bmp",
    ".gif": "image/gif",
    ".webp": "image/webp",
    # source code is read as plain text
    ".py": "text/plain",
    ".js": "text/plain",
    ".ts": "text/plain",
    ".java": "text/plain",
    ".go": "text/plain",
    ".rs": "text/plain",
    ".c": "text/plain",
    ".h": "text/plain",
    ".cpp": "text/plain",
    ".cs": "text/plain",
    ".rb": "text/plain",
    ".php": "text/plain",
    ".sh": "text/plain",
    ".sql": "text/plain",
    ".yaml": "text/plain",
    ".yml": "text/plain",
    ".toml": "text/plain",
    ".xml": "text/plain",
    ".ini": "text/plain",
}


def sniff(data: bytes, name: str, extra: Mapping[str, str] | None = None) -> str | None:
    """The MIME type of ``data``: from its content where that is telling, else its extension
    (``extra``: extensions plug-in loaders add)."""
    head = data[:1024].lstrip()
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    kind = _binary_kind(data)
    if kind:
        return kind
    if head.startswith(b"{\\rtf"):
        return "application/rtf"
    lowered = head[:512].lower()
    # Only a document that *starts* with markup is HTML: Markdown may quote HTML in a fence.
    if lowered.startswith((b"<!doctype html", b"<html")) or (
        lowered.startswith(b"<") and any(t in lowered for t in (b"<html", b"<head", b"<body"))
    ):
        return "text/html"
    suffix = PurePath(name).suffix.lower()
    by_extension = EXTENSIONS.get(suffix) or (extra or {}).get(suffix)
    if by_extension:
        return by_extension
    return "text/plain" if looks_like_text(data) else None


IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"GIF8", "image/gif"),
)


def _binary_kind(data: bytes) -> str | None:
    """Containers and images recognised by their first bytes, whatever the name says."""
    if data.startswith(b"PK\x03\x04"):  # a zip: OOXML, ODF or EPUB
        from citewell.loaders.archive import zip_kind

        return zip_kind(data)
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):  # OLE2: Office 97-2003, .msg
        from citewell.loaders.legacy import ole_kind

        return ole_kind(data)
    if data.startswith(b"BM") and data[6:10] == b"\0\0\0\0":  # BMP: reserved bytes are zero
        return "image/bmp"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in IMAGE_MAGIC if data.startswith(magic)), None)


def looks_like_text(data: bytes) -> bool:
    """True when the bytes decode as text (BOM-marked UTF-16/32 included), not binary."""
    sample = data[:4096]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")):
        return True
    if b"\x00" in sample:
        return False
    control = sum(1 for b in sample if b < 9 or 13 < b < 32)
    return control <= len(sample) // 100
