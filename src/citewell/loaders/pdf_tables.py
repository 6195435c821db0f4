"""Tables on a PDF page, found from how its lines' runs of text line up: consecutive lines
split into several cells by wide gaps, whose cells fall into the same columns. Ruled and
borderless tables alike (the rules themselves are not needed). Each line of the table is a
row; a cell that spans columns lands in the one it covers most, the others stay empty."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from citewell.loaders.pdf_boxes import Line, Segment
from citewell.loaders.tables import markdown_table

MIN_ROWS = 3  # the header and two rows
CELL_GAP = 1.0  # a gap wider than this many text heights separates cells
ROW_GAP = 3.0  # rows further apart than this many text heights end a table
PROSE_WORDS = 6  # a cell of this many words is running text
WIDE_CELL = 0.3  # cells this share of the page wide are columns of text, not a table


@dataclass(frozen=True)
class Cell:
    x0: float
    x1: float
    text: str


@dataclass
class Table:
    lines: list[Line]
    rows: list[list[str]]

    @property
    def top(self) -> float:
        return self.lines[0].top

    def markdown(self) -> str:
        return markdown_table(self.rows)


def cells(line: Line) -> list[Cell]:
    """The line's runs, those closer than a wide gap joined into one cell."""
    out: list[Cell] = []
    for segment in sorted(line.segments, key=lambda s: s.x0):
        if out and segment.x0 - out[-1].x1 <= max(CELL_GAP * _height(segment), 5.0):
            last = out[-1]
            joiner = "" if last.text.endswith(" ") else " "
            out[-1] = Cell(last.x0, max(last.x1, segment.x1), last.text + joiner + segment.text)
        else:
            out.append(Cell(segment.x0, segment.x1, segment.text))
    return [Cell(c.x0, c.x1, " ".join(c.text.split())) for c in out]


def _height(segment: Segment) -> float:
    return segment.bottom - segment.top


def find_tables(lines: list[Line], width: float) -> list[Table]:
    tables = []
    for run in _runs(lines):
        table = _table(run, width)
        if table is not None:
            tables.append(table)
    return tables


def _runs(lines: list[Line]) -> list[list[tuple[Line, list[Cell]]]]:
    """Stretches of consecutive lines of several cells each, close enough to be rows; a
    line of one cell between two such lines stays in (a cell whose neighbours are empty)."""
    split = [(line, cells(line)) for line in lines]
    runs: list[list[tuple[Line, list[Cell]]]] = []
    current: list[tuple[Line, list[Cell]]] = []
    for index, (line, line_cells) in enumerate(split):
        close = bool(current) and _close(current[-1][0], line)
        if len(line_cells) >= 2 or (close and _next_is_row(split, index, line)):
            if current and not close:
                runs.append(current)
                current = []
            current.append((line, line_cells))
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return [_trimmed(run) for run in runs if len(run) >= MIN_ROWS]


def _close(above: Line, below: Line) -> bool:
    height = min(above.bottom - above.top, below.bottom - below.top)
    return below.top - above.bottom <= ROW_GAP * max(height, 1.0)


def _next_is_row(split: list[tuple[Line, list[Cell]]], index: int, line: Line) -> bool:
    if index + 1 >= len(split):
        return False
    after, after_cells = split[index + 1]
    return len(after_cells) >= 2 and _close(line, after)


def _trimmed(run: list[tuple[Line, list[Cell]]]) -> list[tuple[Line, list[Cell]]]:
    while run and len(run[-1][1]) < 2:
        run = run[:-1]
    return run


def _table(run: list[tuple[Line, list[Cell]]], width: float) -> Table | None:
    if len(run) < MIN_ROWS:
        return None
    all_cells = [cell for _, line_cells in run for cell in line_cells]
    if statistics.median(c.x1 - c.x0 for c in all_cells) > WIDE_CELL * width:
        return None  # two columns of running text side by side
    spans = _column_spans(run)
    if len(spans) < 2:
        return None
    rows = [_row(line_cells, spans) for _, line_cells in run]
    if any(_running_text(row[c] for row in rows) for c in range(len(spans))):
        return None  # a column of prose beside it: the page's columns, read apart later
    filled = sum(1 for row in rows for text in row if text)
    if filled < 2 * len(rows):  # mostly empty: text that happens to have gaps
        return None
    return Table([line for line, _ in run], rows)


def _running_text(column: Iterable[str]) -> bool:
    """Most of the column's cells are prose (many words), not values."""
    filled = [text for text in column if text]
    prose = sum(1 for text in filled if len(text.split()) >= PROSE_WORDS)
    return bool(filled) and prose > len(filled) / 2


def _column_spans(run: list[tuple[Line, list[Cell]]]) -> list[tuple[float, float]]:
    """Columns from the rows with the most cells (a header, typically): their cells'
    extents, overlapping ones merged."""
    most = max(len(line_cells) for _, line_cells in run)
    intervals = sorted(
        (c.x0, c.x1) for _, line_cells in run if len(line_cells) == most for c in line_cells
    )
    spans: list[tuple[float, float]] = []
    for x0, x1 in intervals:
        if spans and x0 < spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], x1))
        else:
            spans.append((x0, x1))
    return spans


def _row(line_cells: list[Cell], spans: list[tuple[float, float]]) -> list[str]:
    row = [""] * len(spans)
    for cell in line_cells:
        column = _column_of(cell, spans)
        row[column] = f"{row[column]} {cell.text}".strip()
    return row


def _column_of(cell: Cell, spans: list[tuple[float, float]]) -> int:
    """The column the cell covers most; if none, the one whose middle is nearest."""
    overlaps = [min(cell.x1, x1) - max(cell.x0, x0) for x0, x1 in spans]
    best = max(range(len(spans)), key=lambda i: overlaps[i])
    if overlaps[best] > 0:
        return best
    middle = (cell.x0 + cell.x1) / 2
    return min(range(len(spans)), key=lambda i: abs((spans[i][0] + spans[i][1]) / 2 - middle))
