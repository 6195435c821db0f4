"""Word, PowerPoint and Excel (OOXML) to Markdown: headings, tables and slide/sheet structure."""

from __future__ import annotations

import io
from typing import Any

from citewell.errors import ParseError
from citewell.loaders.archive import open_zip
from citewell.loaders.paged import paged_document
from citewell.loaders.tables import markdown_table
from citewell.types import Document

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _heading_level(style_name: str) -> int | None:
    name = style_name.lower()
    if name == "title":
        return 1
    if name.startswith("heading"):
        digits = "".join(ch for ch in name if ch.isdigit())
        return min(6, int(digits)) if digits else 1
    return None


class DocxLoader:
    mime_types = frozenset({DOCX})

    def load(self, data: bytes, name: str) -> Document:
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph

        open_zip(data, name)
        try:
            document = docx.Document(io.BytesIO(data))
        except Exception as exc:  # python-docx raises many kinds on damaged files
            raise ParseError(f"{name} is not a readable Word file ({exc}).") from exc
        blocks = []
        for item in document.iter_inner_content():
            if isinstance(item, Paragraph):
                text = item.text.strip()
                level = _heading_level(item.style.name if item.style is not None else "")
                if text:
                    blocks.append("#" * level + " " + text if level else text)
            elif isinstance(item, Table):
                blocks.append(markdown_table([c.text for c in row.cells] for row in item.rows))
        return Document("\n\n".join(b for b in blocks if b), name, DOCX)


class PptxLoader:
    """One section per slide, so chunks carry the slide number as their page."""

    mime_types = frozenset({PPTX})

    def load(self, data: bytes, name: str) -> Document:
        from pptx import Presentation

        open_zip(data, name)
        try:
            deck = Presentation(io.BytesIO(data))
        except Exception as exc:
            raise ParseError(f"{name} is not a readable PowerPoint file ({exc}).") from exc
        pages = [_slide_markdown(n, slide) for n, slide in enumerate(deck.slides, start=1)]
        return paged_document(pages, name, PPTX)


def _slide_markdown(number: int, slide: Any) -> str:
    title = slide.shapes.title.text.strip() if slide.shapes.title is not None else ""
    lines = [f"## Slide {number}" + (f": {title}" if title else "")]
    for shape in slide.shapes:
        if shape == slide.shapes.title:
            continue
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
            lines.append(markdown_table(rows))
        elif getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
            lines.append(shape.text_frame.text.strip())
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        notes = slide.notes_slide.notes_text_frame.text.strip()
        if notes:
            lines.append(f"Notes: {notes}")
    return "\n\n".join(lines)


class XlsxLoader:
    """One section per sheet, each a Markdown table."""

    mime_types = frozenset({XLSX})

    def load(self, data: bytes, name: str) -> Document:
        import openpyxl

        archive = open_zip(data, name)
        try:
            book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        except Exception as exc:
            raise ParseError(f"{name} is not a readable Excel file ({exc}).") from exc
        parts = []
        for sheet in book.worksheets:
            table = markdown_table(sheet.iter_rows(values_only=True))
            parts.append(f"## {sheet.title}\n\n{table}" if table else f"## {sheet.title}")
        book.close()
        charts = chart_titles(archive)
        if charts:
            parts.append("## Charts\n\n" + "\n".join(f"- {t}" for t in charts))
        return Document("\n\n".join(parts), name, XLSX)


def chart_titles(archive: Any) -> list[str]:
    """Titles of the charts in a workbook (openpyxl does not read charts back)."""
    import xml.etree.ElementTree as ET

    drawing = "{http://schemas.openxmlformats.org/drawingml/2006/main}t"
    chart = "{http://schemas.openxmlformats.org/drawingml/2006/chart}title"
    titles = []
    for entry in sorted(n for n in archive.namelist() if n.startswith("xl/charts/chart")):
        try:
            root = ET.fromstring(archive.read(entry))
        except ET.ParseError:
            continue
        for title in root.iter(chart):
            text = "".join(t.text or "" for t in title.iter(drawing)).strip()
            if text:
                titles.append(text)
                break
    return titles
