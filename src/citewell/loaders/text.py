"""Plain text and Markdown, in whatever encoding they came in."""

from __future__ import annotations

import codecs

from citewell.errors import ParseError
from citewell.types import Document

BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
]


def decode(data: bytes, name: str) -> str:
    """Text from bytes: the BOM's encoding, else UTF-8, else what charset-normalizer finds."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            return normalize_newlines(data.decode(encoding, errors="replace"))
    try:
        return normalize_newlines(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise ParseError(f"{name}: could not tell the text encoding; save it as UTF-8.")
    return normalize_newlines(str(best))


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


class TextLoader:
    mime_types = frozenset({"text/plain"})

    def load(self, data: bytes, name: str) -> Document:
        return Document(text=decode(data, name), name=name, mime_type="text/plain")


class MarkdownLoader:
    """Markdown stays Markdown: the header splitter reads its headings."""

    mime_types = frozenset({"text/markdown"})

    def load(self, data: bytes, name: str) -> Document:
        text = decode(data, name)
        title = next(
            (ln.lstrip("#").strip() for ln in text.splitlines() if ln.startswith("# ")), None
        )
        return Document(text=text, name=name, mime_type="text/markdown", title=title)
