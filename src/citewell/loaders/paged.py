"""Documents made of pages (or slides): their texts joined, each page's span recorded."""

from __future__ import annotations

from collections.abc import Sequence

from citewell.types import Document, PageBox, Section

PAGE_SEPARATOR = "\n\n"


def paged_document(
    pages: list[str],
    name: str,
    mime_type: str,
    title: str | None = None,
    boxes: Sequence[Sequence[PageBox]] = (),
    running: Sequence[tuple[str, ...]] = (),
) -> Document:
    """Join page (or slide) texts, recording each one's span so chunks know their page;
    ``boxes``: where each page's lines sit, with offsets into that page's text;
    ``running``: each page's running headers and footers, left out of its text."""
    parts: list[str] = []
    sections: list[Section] = []
    offset = 0
    for number, text in enumerate(pages, start=1):
        if not text:
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        page_boxes = boxes[number - 1] if number <= len(boxes) else ()
        placed = tuple((offset + b[0], offset + b[1], b[2], b[3], b[4], b[5]) for b in page_boxes)
        left_out = running[number - 1] if number <= len(running) else ()
        sections.append(Section(offset, offset + len(text), number, (), placed, left_out))
        parts.append(text)
        offset += len(text)
    return Document("".join(parts), name, mime_type, tuple(sections), title)
