"""A PDF page's text as a reader sees it, from where PDFium places each run of text: lines
rebuilt from their boxes, two columns read one after the other, and tables (ruled or not)
written as Markdown tables with their rows intact.

PDFium gives the text of a page as rectangles, one per run of glyphs that share a line and a
font; a table cell or a column's line is a run of its own. Coordinates here are points from
the page's top-left corner (PDF's own start at the bottom)."""

from __future__ import annotations

import re
import statistics
import unicodedata
from dataclasses import dataclass
from typing import Any

from citewell.loaders.pdf_boxes import Line, Segment
from citewell.loaders.pdf_tables import Table, find_tables
from citewell.loaders.pdf_write import Band, Content, Paragraph, Written, write_blocks

CONTROL = re.compile(r"[\x00-\x01\x03-\x08\x0b\x0e-\x1f]")  # unmapped glyphs come out as NULs
BOLD = 600  # font weights from this one up are bold
TALL = 4.0  # runs this many times the usual text height are set sideways
MIN_COLUMN_LINES = 4  # lines on each side of a gutter before a page counts as two columns


@dataclass(frozen=True)
class PageLayout:
    width: float
    height: float
    lines: list[Line]
    sideways: list[Line]  # margin notes set sideways: read after the page


def read_page(page: Any) -> PageLayout:
    """The runs of a pypdfium2 page, grouped into lines."""
    width, height = page.get_size()
    textpage = page.get_textpage()
    try:
        segments = []
        for index in range(textpage.count_rects()):
            left, bottom, right, top = textpage.get_rect(index)
            raw = textpage.get_text_bounded(left, bottom, right, top)
            text = _clean(raw)
            if text.strip():
                size, bold = _font(textpage, left, (top + bottom) / 2)
                box = (left, height - top, right, height - bottom)
                segments.append(Segment(*box, text, size, bold))
    finally:
        textpage.close()
    if not segments:
        return PageLayout(width, height, [], [])
    usual = statistics.median(s.height for s in segments)
    upright = [s for s in segments if s.height <= TALL * usual]
    sideways = [Line([s]) for s in segments if s.height > TALL * usual]
    return PageLayout(width, height, group_lines(upright), sideways)


def _font(textpage: Any, x: float, y: float) -> tuple[float, bool]:
    """The size and boldness of the glyph at (x, y), in PDF's coordinates."""
    import pypdfium2.raw as pdfium_c

    index = textpage.get_index(x + 1, y, 2, 2)
    if index is None or index < 0:
        return 0.0, False
    size = float(pdfium_c.FPDFText_GetFontSize(textpage.raw, index))
    return size, pdfium_c.FPDFText_GetFontWeight(textpage.raw, index) >= BOLD


def _clean(text: str) -> str:
    # NFKC folds ligatures (ﬁ) and Arabic presentation forms back into searchable letters
    text = CONTROL.sub("", text.replace("\r\n", " ").replace("\n", " "))
    return unicodedata.normalize("NFKC", text)


def layout_from_runs(
    runs: list[tuple[float, float, float, float, str]],
    size: tuple[int, int],
    page_size: tuple[float, float],
) -> PageLayout:
    """A scanned page laid out from OCR: runs in pixels of an image of ``size``, turned into
    the page's points, so tables and columns are found as on a text layer."""
    width, height = page_size
    scale_x, scale_y = width / max(1, size[0]), height / max(1, size[1])
    segments = [
        Segment(x0 * scale_x, top * scale_y, x1 * scale_x, bottom * scale_y, text)
        for x0, top, x1, bottom, text in runs
        if text.strip()
    ]
    return PageLayout(width, height, group_lines(segments), [])


def group_lines(segments: list[Segment]) -> list[Line]:
    """Runs whose boxes overlap vertically by half the smaller one share a line (so a
    superscript stays with its line); lines top to bottom."""
    lines: list[Line] = []
    for segment in sorted(segments, key=lambda s: (s.top, s.x0)):
        for line in reversed(lines[-4:]):
            overlap = min(line.bottom, segment.bottom) - max(line.top, segment.top)
            smaller = min(line.bottom - line.top, segment.height) or 1.0
            if overlap >= 0.5 * smaller:
                line.segments.append(segment)
                break
        else:
            lines.append(Line([segment]))
    return lines


Block = tuple[float, Content]  # its top, and what it holds


def blocks_text(blocks: list[Block]) -> Written:
    """The blocks' text, with where each line's text went and where the line sits."""
    out = Written()
    write_blocks(blocks, out)
    return out


def page_blocks(layout: PageLayout) -> list[Block]:
    """Paragraphs and tables in reading order. Tables across the whole width are found
    first; then, on a page of two columns, tables inside each column."""
    tables = find_tables(layout.lines, layout.width)
    in_tables = {id(line) for table in tables for line in table.lines}
    rest = [line for line in layout.lines if id(line) not in in_tables]
    gutter = find_gutter(rest, layout.width)
    blocks: list[Block] = [(t.top, t) for t in tables]
    if gutter is None:
        blocks.extend(_paragraphs(rest))
    else:
        blocks.extend(_columns(rest, gutter, [t.top for t in tables], layout.width))
    blocks.sort(key=lambda block: block[0])
    blocks.extend((layout.height, Paragraph([line])) for line in layout.sideways)
    return blocks


def find_gutter(lines: list[Line], width: float) -> float | None:
    """The x of the blank strip between two columns, if the page has them: no run crosses
    it on most lines, and many lines have text on both sides of it at the same height."""
    best: tuple[int, float] | None = None
    for x in range(int(width * 0.3), int(width * 0.7), 2):
        crossing = both = 0
        for line in lines:
            if any(s.x0 < x < s.x1 for s in line.segments):
                crossing += 1
            elif line.x0 < x < line.x1:
                both += 1
        if both >= max(MIN_COLUMN_LINES, len(lines) // 4) and crossing <= len(lines) // 4:
            score = both - 3 * crossing
            if best is None or score > best[0]:
                best = (score, float(x))
    return None if best is None else best[1]


def _columns(lines: list[Line], gutter: float, breaks: list[float], width: float) -> list[Block]:
    """Lines that cross the gutter (titles, wide figures) and tables cut the page into
    bands; in each band the left column is read before the right."""
    spanning = [line for line in lines if any(s.x0 < gutter < s.x1 for s in line.segments)]
    cuts = sorted([line.top for line in spanning] + breaks)
    blocks: list[Block] = list(_paragraphs(spanning))
    bands: dict[int, tuple[list[Line], list[Line]]] = {}
    for line in lines:
        if any(s.x0 < gutter < s.x1 for s in line.segments):
            continue
        band = bands.setdefault(sum(1 for cut in cuts if cut <= line.top), ([], []))
        left = [s for s in line.segments if s.x1 <= gutter]
        right = [s for s in line.segments if s.x0 >= gutter]
        if left:
            band[0].append(Line(left))
        if right:
            band[1].append(Line(right))
    for left_lines, right_lines in bands.values():
        column_blocks = _column(left_lines, width) + _column(right_lines, width)
        if column_blocks:
            # one block: the sort by height must not interleave the two columns
            blocks.append((column_blocks[0][0], Band(column_blocks)))
    return blocks


def _column(lines: list[Line], width: float) -> list[Block]:
    """One column of a band: its tables and paragraphs, top to bottom."""
    tables = find_tables(lines, width)
    in_tables = {id(line) for table in tables for line in table.lines}
    blocks: list[Block] = [(t.top, t) for t in tables]
    blocks.extend(_paragraphs([line for line in lines if id(line) not in in_tables]))
    return sorted(blocks, key=lambda block: block[0])


def _paragraphs(lines: list[Line]) -> list[Block]:
    """Consecutive lines as paragraphs: a new one where the gap between lines is clearly
    wider than the usual line spacing, or the type changes. Each paragraph with its top."""
    if not lines:
        return []
    lines = sorted(lines, key=lambda line: line.top)
    pitches = [b.top - a.top for a, b in zip(lines, lines[1:], strict=False) if b.top > a.top]
    usual = statistics.median(pitches) if pitches else 0.0
    paragraphs: list[Block] = []
    current: list[Line] = []
    for previous, line in zip([None, *lines], lines, strict=False):
        if previous is not None and _new_paragraph(previous, line, usual):
            paragraphs.append((current[0].top, Paragraph(current)))
            current = []
        current.append(line)
    paragraphs.append((current[0].top, Paragraph(current)))
    return paragraphs


def _new_paragraph(previous: Line, line: Line, usual: float) -> bool:
    """A gap clearly wider than the usual line spacing, or a change of type size (a
    heading, a caption)."""
    if usual and line.top - previous.top > 1.6 * usual:
        return True
    if previous.bold != line.bold:
        return True
    return bool(previous.size and line.size) and abs(previous.size - line.size) > 0.5


__all__ = [
    "Block",
    "Line",
    "PageLayout",
    "Segment",
    "Table",
    "blocks_text",
    "group_lines",
    "page_blocks",
    "read_page",
]
