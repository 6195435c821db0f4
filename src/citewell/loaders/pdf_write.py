"""A page's blocks written out as text, remembering where each line's (or table row's) text
went and where it sits on the page, so a citation's characters can be shown as boxes on the
page itself."""

from __future__ import annotations

from dataclasses import dataclass, field

from citewell.loaders.pdf_boxes import Line
from citewell.loaders.pdf_tables import Table
from citewell.types import PageBox

HYPHEN = "\x02"  # PDFium's mark for a word broken at the end of a line
Box = PageBox  # start, end in the text; x0, top, x1, bottom


@dataclass
class Paragraph:
    lines: list[Line]


@dataclass
class Band:
    """Blocks that stay together in this order (a band's left column, then its right)."""

    blocks: list[tuple[float, Paragraph | Table | Band]]


Content = Paragraph | Table | Band


@dataclass
class Written:
    parts: list[str] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    length: int = 0

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, text: str, line: Line | None = None) -> None:
        if line is not None and text:
            box = (line.x0, line.top, line.x1, line.bottom)
            self.boxes.append((self.length, self.length + len(text), *box))
        self.parts.append(text)
        self.length += len(text)

    def drop_last(self) -> None:
        """Take back the last character written (a line-end hyphen)."""
        self.parts[-1] = self.parts[-1][:-1]
        self.length -= 1
        if self.boxes and self.boxes[-1][1] > self.length:
            self.boxes[-1] = (self.boxes[-1][0], self.length, *self.boxes[-1][2:])


def write_blocks(blocks: list[tuple[float, Content]], out: Written) -> None:
    first = True
    for _, content in blocks:
        if _empty(content):
            continue
        if not first:
            out.add("\n\n")
        first = False
        _write(content, out)


def _empty(content: Content) -> bool:
    if isinstance(content, Paragraph):
        return not any(line.text() for line in content.lines)
    if isinstance(content, Band):
        return all(_empty(c) for _, c in content.blocks)
    return not content.markdown()


def _write(content: Content, out: Written) -> None:
    if isinstance(content, Band):
        write_blocks(content.blocks, out)
    elif isinstance(content, Table):
        _write_table(content, out)
    else:
        _write_paragraph(content, out)


def _write_paragraph(paragraph: Paragraph, out: Written) -> None:
    """Lines joined by newlines; a word broken at a line's end made whole again."""
    previous = ""
    for line in paragraph.lines:
        text = line.text()
        if previous.endswith(HYPHEN):
            out.drop_last()
        elif previous:
            out.add("\n")
        out.add(text.replace(HYPHEN, "-") if not text.endswith(HYPHEN) else _inner(text), line)
        previous = text
    if previous.endswith(HYPHEN):  # the paragraph's last word was broken: a plain hyphen
        out.drop_last()
        out.add("-")


def _inner(text: str) -> str:
    """A line's text, hyphens inside it written as such, the one at its end kept for now."""
    return text[:-1].replace(HYPHEN, "-") + HYPHEN


def _write_table(table: Table, out: Written) -> None:
    """The Markdown table, each row's box the box of the line it came from (a header taken
    over from the page before has none)."""
    rows = table.markdown().split("\n")
    offset = len(table.rows) - len(table.lines)  # rows not drawn on this page
    for index, row in enumerate(rows):
        if index:
            out.add("\n")
        number = index - 1 if index > 1 else index  # the delimiter row is line 1
        line_index = number - offset
        drawn = index != 1 and 0 <= line_index < len(table.lines)
        out.add(row, table.lines[line_index] if drawn else None)
