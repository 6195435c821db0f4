"""Markdown pipe tables: how every loader writes tabular content (HTML, Office, CSV)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def markdown_table(rows: Iterable[Iterable[Any]]) -> str:
    """A pipe table from rows of cells; the first row is the header, empty rows are dropped."""
    cells = [
        [" ".join(str(c if c is not None else "").split()).replace("|", "\\|") for c in row]
        for row in rows
    ]
    cells = [r for r in cells if any(r)]
    if not cells:
        return ""
    width = max(len(r) for r in cells)
    cells = [r + [""] * (width - len(r)) for r in cells]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells[1:]])
