"""PDF with a text layer, page by page (pypdf: BSD-licensed, pure Python)."""

from __future__ import annotations

import io
import logging

from citewell.errors import ParseError
from citewell.types import Document, Section

PAGE_SEPARATOR = "\n\n"


class PdfLoader:
    mime_types = frozenset({"application/pdf"})

    def load(self, data: bytes, name: str) -> Document:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError

        logging.getLogger("pypdf").setLevel(logging.ERROR)
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and reader.decrypt("") == 0:
                raise ParseError(f"{name} is password-protected; remove the password and retry.")
            pages = [(page.extract_text() or "").strip() for page in reader.pages]
        except PdfReadError as exc:
            raise ParseError(f"{name} is not a readable PDF ({exc}).") from exc
        except ParseError:
            raise
        except Exception as exc:  # pypdf raises many kinds on damaged files
            raise ParseError(
                f"{name} could not be read as PDF ({type(exc).__name__}: {exc})."
            ) from exc
        return build_document(pages, name)


def build_document(pages: list[str], name: str) -> Document:
    """Join page texts, recording each page's span so chunks know their page number."""
    if not any(pages):
        raise ParseError(
            f"{name} has no text layer (a scan?). OCR support comes with a later release; "
            "for now run it through an OCR tool (e.g. ocrmypdf) first."
        )
    parts: list[str] = []
    sections: list[Section] = []
    offset = 0
    for number, text in enumerate(pages, start=1):
        if not text:
            continue
        if parts:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        sections.append(Section(start=offset, end=offset + len(text), page=number))
        parts.append(text)
        offset += len(text)
    return Document(
        text="".join(parts), name=name, mime_type="application/pdf", sections=tuple(sections)
    )
