"""Small-to-big: search small chunks (precise), answer from the text around them (enough
context). The model reads a wider window; the source still cites the retrieved span."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from citewell.answer.context import CitedSource
from citewell.types import Section

# A file's extracted text and its sections, or None when it is not kept.
TextLookup = Callable[[str], tuple[str, Sequence[Section]] | None]
BREAKS = ("\n\n", "\n", ". ", " ")  # snap a window's ends to the largest of these
HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)


@dataclass(frozen=True)
class Expansion:
    mode: str  # "off", "window" or "section"
    chars: int  # window: characters added on each side; section: at most this many per side


def expand_sources(
    sources: Sequence[CitedSource], lookup: TextLookup, how: Expansion
) -> list[CitedSource]:
    """Each chunk source with the wider text the model reads (``context``) and where it lies
    (``window_start``..``window_end``); whole documents and unknown files stay as they are."""
    if how.mode == "off":
        return list(sources)
    texts: dict[str, tuple[str, Sequence[Section]] | None] = {}
    out = []
    for source in sources:
        if source.chunk_id is None:
            out.append(source)
            continue
        if source.file_id not in texts:
            texts[source.file_id] = lookup(source.file_id)
        found = texts[source.file_id]
        if found is None or found[0][source.start : source.end] != source.text:
            out.append(source)  # the text changed since (or was never kept): no window
            continue
        text, sections = found
        start, end = span(text, sections, source.start, source.end, how)
        out.append(replace(source, context=text[start:end], window_start=start, window_end=end))
    return out


def span(
    text: str, sections: Sequence[Section], start: int, end: int, how: Expansion
) -> tuple[int, int]:
    """The window around ``start``..``end``: ``how.chars`` on each side, snapped inward to a
    paragraph, line, sentence or word break; in section mode, no further than the chunk's
    section (its stretch of text under one heading path)."""
    low, high = 0, len(text)
    if how.mode == "section":
        if any(s.headings for s in sections):
            low, high = section_bounds(sections, start, end, low, high)
        else:  # Markdown (and HTML, converted to it) keeps its headings in the text
            low, high = heading_bounds(text, start, end)
    left = max(low, start - how.chars)
    right = min(high, end + how.chars)
    # A window that reaches its bound (the text's or the section's) ends there, unsnapped.
    left = left if left == low else snap_left(text, left, start)
    right = right if right == high else snap_right(text, end, right)
    return left, right


def section_bounds(
    sections: Sequence[Section], start: int, end: int, low: int, high: int
) -> tuple[int, int]:
    at = [i for i, s in enumerate(sections) if s.start <= start < s.end]
    if not at:
        return low, high
    first = last = at[0]
    headings = sections[first].headings
    while first > 0 and sections[first - 1].headings == headings:
        first -= 1
    while last + 1 < len(sections) and sections[last + 1].headings == headings:
        last += 1
    return min(sections[first].start, start), max(sections[last].end, end)


def heading_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """From the last Markdown heading line at or before ``start`` to the next one after
    ``end`` (the whole text where there is none)."""
    before = [m.start() for m in HEADING.finditer(text, 0, start + 1)]
    after = HEADING.search(text, end)
    return (before[-1] if before else 0), (after.start() if after else len(text))


def snap_left(text: str, left: int, start: int) -> int:
    for mark in BREAKS:
        found = text.find(mark, left, start)
        if found >= 0:
            return found + len(mark)
    return start


def snap_right(text: str, end: int, right: int) -> int:
    for mark in BREAKS:
        found = text.rfind(mark, end, right)
        if found >= 0:
            return found + (1 if mark == ". " else 0)
    return end
