"""Documents made of pages (or slides): their texts joined, each page's span recorded."""

from __future__ import annotations

from citewell.types import Document, Section

PAGE_SEPARATOR = "\n\n"


def paged_document(
    pages: list[str], name: str, mime_type: str, title: str | None = None
) -> Document:
    """Join page (or slide) texts, recording each one's span so chunks know their page."""
    parts: list[str] = []
    sections: list[Section] = []
    offset = 0
    for number, text in enumerate(pages, start=1):
        if not text:
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        sections.append(Section(start=offset, end=offset + len(text), page=number))
        parts.append(text)
        offset += len(text)
    return Document("".join(parts), name, mime_type, tuple(sections), title)
