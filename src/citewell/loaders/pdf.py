"""PDF: each page read as laid out (pypdfium2, Apache-2.0/BSD: lines rebuilt from where the
text sits, columns one after the other, tables as Markdown; see pdf_layout), running headers,
footers and page numbers left out; pages without a text layer are rendered and read by OCR."""

from __future__ import annotations

import io
import logging
import re
import unicodedata
from collections import Counter
from typing import Any

from citewell.errors import InvalidInput, ParseError
from citewell.loaders.ocr import NO_OCR, OcrEngine
from citewell.loaders.paged import paged_document
from citewell.loaders.pdf_layout import (
    CONTROL,
    Block,
    Line,
    PageLayout,
    Table,
    blocks_text,
    layout_from_runs,
    page_blocks,
    read_page,
)
from citewell.loaders.pdf_write import Box
from citewell.types import Document

PDF = "application/pdf"
MIN_PAGE_CHARS = 20  # fewer characters than this on a page with images: treat it as a scan
MAX_RENDER_SCALE = 4.0  # 288 dpi: enough for any screen, bounded for odd page sizes
MARGIN = 0.1  # running headers and footers sit in this share of the page at top and bottom
RUNNING = 0.4  # ...and repeat on at least this share of the pages
RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")  # Hebrew, Arabic, Syriac...
DIGITS = re.compile(r"\d+")
PAGE_NUMBER = re.compile(r"^(page\s*)?[#ivxlc]+(\s*(of|/)\s*#)?$", re.IGNORECASE)


class PdfLoader:
    mime_types = frozenset({PDF})

    def __init__(self, ocr: OcrEngine | None = None, dpi: int = 200) -> None:
        self.ocr = ocr
        self.dpi = dpi

    def load(self, data: bytes, name: str) -> Document:
        document = _open(data, name)
        try:
            pages, boxes, dropped = _read_pages(document, name)
            right_to_left = [i for i, text in enumerate(pages) if _right_to_left(text)]
            if right_to_left:
                texts = _pypdf_pages(data, right_to_left)
                _replace(pages, boxes, dict(zip(right_to_left, texts, strict=True)))
            scanned = [i for i, text in enumerate(pages) if len(text) < MIN_PAGE_CHARS]
            if scanned and self.ocr is None and not any(pages):
                raise ParseError(f"{name} is a scan (no text layer): it {NO_OCR}")
            if scanned and self.ocr is not None:
                read = self._ocr_pages(document, name, scanned)
                for index, (text, page_boxes) in zip(scanned, read, strict=True):
                    if text:
                        pages[index], boxes[index] = text, page_boxes
        finally:
            document.close()
        if not any(pages):
            raise ParseError(f"{name} has no text layer and OCR found no text in it.")
        return paged_document(pages, name, PDF, boxes=boxes, running=dropped)

    def _ocr_pages(
        self, document: Any, name: str, indexes: list[int]
    ) -> list[tuple[str, list[Box]]]:
        """Each page's OCR text; laid out like a text layer (columns, tables, boxes) when
        the engine says where its words stand."""
        import pypdfium2 as pdfium

        assert self.ocr is not None
        try:
            return [self._ocr_page(document[index]) for index in indexes]
        except pdfium.PdfiumError as exc:
            raise ParseError(f"{name}: a page could not be rendered for OCR ({exc}).") from exc

    def _ocr_page(self, page: Any) -> tuple[str, list[Box]]:
        assert self.ocr is not None
        image = page.render(scale=self.dpi / 72).to_pil()
        runs = getattr(self.ocr, "runs", None)
        if runs is None:
            return self.ocr.recognize(image).strip(), []
        found, size = runs(image)
        layout = layout_from_runs(found, size, page.get_size())
        written = blocks_text(page_blocks(layout))
        return written.text.strip(), [_share(box, layout) for box in written.boxes]


def render_page(data: bytes, page: int, width: int) -> bytes:
    """Page ``page`` (from 1) as a PNG ``width`` pixels wide: what the viewer shows under a
    citation's boxes."""
    document = _open(data, "the file")
    try:
        if not 1 <= page <= len(document):
            raise InvalidInput(f"This PDF has {len(document)} pages; there is no page {page}.")
        pdf_page = document[page - 1]
        scale = width / max(1.0, pdf_page.get_size()[0])
        image = pdf_page.render(scale=min(scale, MAX_RENDER_SCALE)).to_pil()
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=False)
        return out.getvalue()
    finally:
        document.close()


def _open(data: bytes, name: str) -> Any:
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            message = f"{name} is password-protected; remove the password and retry."
            raise ParseError(message) from exc
        raise ParseError(f"{name} is not a readable PDF ({exc}).") from exc


def _replace(pages: list[str], boxes: list[list[Box]], texts: dict[int, str]) -> None:
    """Pages read another way (pypdf, OCR): their text, and no boxes."""
    for index, text in texts.items():
        pages[index], boxes[index] = text, []


def _read_pages(
    document: Any, name: str
) -> tuple[list[str], list[list[Box]], list[tuple[str, ...]]]:
    """Each page's text, running headers and footers left out; where its lines sit (as
    shares of the page's width and height); the running lines left out of it."""
    try:
        layouts = [read_page(document[index]) for index in range(len(document))]
    except Exception as exc:  # PDFium reports damage in several ways
        raise ParseError(f"{name} could not be read as PDF ({type(exc).__name__}: {exc}).") from exc
    running = running_lines(layouts)
    pages = [page_blocks(_without(layout, running)) for layout in layouts]
    for before, after in zip(pages, pages[1:], strict=False):
        _continue_table(before, after)
    written = [blocks_text(blocks) for blocks in pages]
    boxes = [
        [_share(box, layout) for box in out.boxes]
        for out, layout in zip(written, layouts, strict=True)
    ]
    dropped = [_dropped(layout, running) for layout in layouts]
    return [out.text for out in written], boxes, dropped


def _dropped(layout: PageLayout, running: set[str]) -> tuple[str, ...]:
    return tuple(line.text() for line in _in_margins(layout) if _shape(line) in running)


def _share(box: Box, layout: PageLayout) -> Box:
    start, end, x0, top, x1, bottom = box
    width, height = layout.width or 1.0, layout.height or 1.0
    left, right = round(x0 / width, 4), round(x1 / width, 4)
    return (start, end, left, round(top / height, 4), right, round(bottom / height, 4))


def _continue_table(before: list[Block], after: list[Block]) -> None:
    """A table that goes on over a page break without repeating its header gets the
    header of the part before it (same columns, a first row that is not that header)."""
    if not before or not after:
        return
    last, first = before[-1][1], after[0][1]
    if not isinstance(last, Table) or not isinstance(first, Table):
        return
    header = last.rows[0]
    if len(first.rows[0]) == len(header) and first.rows[0] != header:
        after[0] = (after[0][0], Table(first.lines, [header, *first.rows]))


def _right_to_left(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(1 for c in letters if RTL.match(c)) > 0.3 * len(letters)


def _pypdf_pages(data: bytes, indexes: list[int]) -> list[str]:
    """Pages in right-to-left scripts as pypdf reads them: PDFium hands Arabic ligatures
    (lam-alef) over with their letters swapped, pypdf in their logical order."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    reader = PdfReader(io.BytesIO(data))
    texts = []
    for index in indexes:
        text = CONTROL.sub("", reader.pages[index].extract_text() or "")
        texts.append(unicodedata.normalize("NFKC", text).strip())
    return texts


def running_lines(layouts: list[PageLayout]) -> set[str]:
    """Lines in the top or bottom margin that repeat (numbers aside) on many pages, and
    bare page numbers there: headers, footers, folios."""
    seen: Counter[str] = Counter()
    for layout in layouts:
        seen.update({_shape(line) for line in _in_margins(layout)})
    enough = max(2, RUNNING * len(layouts))
    return {
        shape
        for shape, count in seen.items()
        if count >= enough or (PAGE_NUMBER.match(shape) and count >= 2)
    }


def _without(layout: PageLayout, running: set[str]) -> PageLayout:
    if not running:
        return layout
    margin = {id(line) for line in _in_margins(layout) if _shape(line) in running}
    kept = [line for line in layout.lines if id(line) not in margin]
    return PageLayout(layout.width, layout.height, kept, layout.sideways)


def _in_margins(layout: PageLayout) -> list[Line]:
    top, bottom = layout.height * MARGIN, layout.height * (1 - MARGIN)
    return [line for line in layout.lines if line.bottom <= top or line.top >= bottom]


def _shape(line: Line) -> str:
    return DIGITS.sub("#", " ".join(line.text().lower().split()))
