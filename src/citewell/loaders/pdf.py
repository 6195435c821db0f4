"""PDF: the text layer page by page (pypdf, BSD); pages without one are rendered (pypdfium2,
Apache-2.0/BSD) and read by OCR."""

from __future__ import annotations

import io
import logging
import re
import unicodedata
from typing import Any

from citewell.errors import ParseError
from citewell.loaders.ocr import NO_OCR, OcrEngine
from citewell.loaders.paged import paged_document
from citewell.types import Document

PDF = "application/pdf"
CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")  # unmapped glyphs come out as NULs
MIN_PAGE_CHARS = 20  # fewer characters than this on a page with images: treat it as a scan


class PdfLoader:
    mime_types = frozenset({PDF})

    def __init__(self, ocr: OcrEngine | None = None, dpi: int = 200) -> None:
        self.ocr = ocr
        self.dpi = dpi

    def load(self, data: bytes, name: str) -> Document:
        pages = text_layer(data, name)
        scanned = [i for i, text in enumerate(pages) if len(text) < MIN_PAGE_CHARS]
        if scanned:
            if self.ocr is None and not any(pages):
                raise ParseError(f"{name} is a scan (no text layer): it {NO_OCR}")
            if self.ocr is not None:
                for index, text in zip(scanned, self._ocr_pages(data, name, scanned), strict=True):
                    pages[index] = text.strip() or pages[index]
        if not any(pages):
            raise ParseError(f"{name} has no text layer and OCR found no text in it.")
        return paged_document(pages, name, PDF)

    def _ocr_pages(self, data: bytes, name: str, indexes: list[int]) -> list[str]:
        import pypdfium2 as pdfium

        assert self.ocr is not None
        try:
            document = pdfium.PdfDocument(data)
            texts = []
            for index in indexes:
                image = document[index].render(scale=self.dpi / 72).to_pil()
                texts.append(self.ocr.recognize(image))
        except pdfium.PdfiumError as exc:
            raise ParseError(f"{name}: a page could not be rendered for OCR ({exc}).") from exc
        return texts


def text_layer(data: bytes, name: str) -> list[str]:
    """Each page's text, in the order the page draws it (column by column on most layouts)."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and reader.decrypt("") == 0:
            raise ParseError(f"{name} is password-protected; remove the password and retry.")
        return [_page_text(page) for page in reader.pages]
    except PdfReadError as exc:
        raise ParseError(f"{name} is not a readable PDF ({exc}).") from exc
    except ParseError:
        raise
    except Exception as exc:  # pypdf raises many kinds on damaged files
        raise ParseError(f"{name} could not be read as PDF ({type(exc).__name__}: {exc}).") from exc


def _page_text(page: Any) -> str:
    # NFKC folds ligatures (ﬁ) and Arabic presentation forms back into searchable letters
    return unicodedata.normalize("NFKC", CONTROL.sub("", page.extract_text() or "")).strip()
