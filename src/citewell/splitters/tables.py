"""Markdown tables in chunking (every loader writes tables as Markdown pipe tables): a table
is cut only between rows; one that fits a chunk stays whole, with the paragraph that
introduces it when both fit; the parts of a longer one each carry the table's header row
(and caption) as their last heading, so a part stands on its own when embedded and when an
LLM reads it, while the chunk's text stays ``document.text[start:end]``."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from citewell.types import TABLE_DELIMITER as DELIMITER
from citewell.types import Chunk, Document

if TYPE_CHECKING:
    from citewell.splitters.base import Splitter

ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
MAX_CAPTION = 300  # a paragraph this short right before a table introduces it

Span = tuple[int, int]


@dataclass(frozen=True)
class TableSpan:
    start: int  # the header row
    body: int  # the first row after the delimiter row
    end: int  # the end of the last row
    caption: Span | None  # the short paragraph just before it, if any

    def heading(self, text: str) -> str:
        """What each part of the table carries: caption, header row, delimiter row."""
        caption = text[self.caption[0] : self.caption[1]].strip() + "\n" if self.caption else ""
        return caption + text[self.start : self.body].rstrip("\n")


def find_tables(text: str, start: int = 0, end: int | None = None) -> list[TableSpan]:
    """Pipe tables (a header row, a delimiter row, rows) within text[start:end]."""
    end = len(text) if end is None else end
    tables: list[TableSpan] = []
    lines = _lines(text, start, end)
    index = 0
    while index + 1 < len(lines):
        (s, e), (ds, de) = lines[index], lines[index + 1]
        if ROW.match(text[s:e]) and DELIMITER.match(text[ds:de]):
            last = index + 1
            while last + 1 < len(lines) and ROW.match(text[slice(*lines[last + 1])]):
                last += 1
            body = lines[index + 2][0] if index + 2 <= last else de
            tables.append(TableSpan(s, body, lines[last][1], _caption(text, start, s)))
            index = last + 1
        else:
            index += 1
    return tables


def _lines(text: str, start: int, end: int) -> list[Span]:
    spans, position = [], start
    while position < end:
        newline = text.find("\n", position, end)
        stop = end if newline < 0 else newline
        spans.append((position, stop))
        position = stop + 1
    return spans


def _caption(text: str, floor: int, table_start: int) -> Span | None:
    """The paragraph right before the table, when it is short (a caption, a heading, a
    sentence ending in a colon)."""
    before = text.rfind("\n\n", floor, max(floor, table_start - 2))
    start = floor if before < 0 else before + 2
    caption = text[start:table_start].strip()
    if not caption or len(caption) > MAX_CAPTION or ROW.match(caption.splitlines()[-1]):
        return None
    return (start, start + len(text[start:table_start].rstrip()))


def table_atoms(
    text: str, table: TableSpan, size: int, length: Callable[[int, int], int]
) -> list[Span]:
    """The pieces a splitter may join but never cut: the caption with the whole table when
    that fits, else the table whole, else its header with the first rows and then each
    further row (a row longer than a chunk is cut by the splitter as any long line)."""
    if table.caption and length(table.caption[0], table.end) <= size:
        return [(table.caption[0], table.end)]
    atoms = [table.caption] if table.caption else []
    if length(table.start, table.end) <= size:
        return [*atoms, (table.start, table.end)]
    rows = _lines(text, table.body, table.end)
    first = (table.start, rows[0][1] if rows else table.end)
    return [*atoms, first, *rows[1:]]


def with_table_headings(document: Document, chunks: list[Chunk]) -> list[Chunk]:
    """Each chunk that holds rows of a table but not its header row gets the header (and
    caption) as its last heading."""
    tables = find_tables(document.text)
    if not tables:
        return chunks
    out = []
    for chunk in chunks:
        table = next((t for t in tables if t.body < chunk.end and chunk.start < t.end), None)
        if table is not None and chunk.start >= table.body:
            heading = table.heading(document.text)
            out.append(replace(chunk, headings=(*chunk.headings, heading)))
        else:
            out.append(chunk)
    return out


class TableHeadings:
    """Any splitter, its chunks of later table rows given the table's header."""

    def __init__(self, inner: Splitter) -> None:
        self.inner = inner

    def split(self, document: Document) -> list[Chunk]:
        return with_table_headings(document, self.inner.split(document))
