"""Loaders by MIME type. Adding a format: write a Loader, add it to LOADERS."""

from __future__ import annotations

from citewell.errors import ParseError, UnsupportedFormat
from citewell.loaders.base import EXTENSIONS, Loader, sniff
from citewell.loaders.epub import EpubLoader
from citewell.loaders.html import HtmlLoader
from citewell.loaders.office import DocxLoader, PptxLoader, XlsxLoader
from citewell.loaders.pdf import PdfLoader
from citewell.loaders.tabular import CsvLoader, JsonLoader
from citewell.loaders.text import MarkdownLoader, TextLoader
from citewell.types import Document

LOADERS: list[Loader] = [
    TextLoader(),
    MarkdownLoader(),
    HtmlLoader(),
    PdfLoader(),
    CsvLoader(),
    JsonLoader(),
    DocxLoader(),
    PptxLoader(),
    XlsxLoader(),
    EpubLoader(),
]

__all__ = ["LOADERS", "Loader", "load_bytes", "loader_for", "sniff", "supported_extensions"]


def loader_for(mime_type: str) -> Loader:
    for loader in LOADERS:
        if mime_type in loader.mime_types:
            return loader
    raise UnsupportedFormat(f"No loader for {mime_type}.")


def supported_extensions() -> list[str]:
    return sorted(EXTENSIONS)


def load_bytes(data: bytes, name: str) -> Document:
    """Detect the format and extract the text; errors are typed and say what to do."""
    if not data:
        raise ParseError(f"{name} is empty (0 bytes); nothing to index.")
    mime_type = sniff(data, name)
    if mime_type is None:
        raise UnsupportedFormat(
            f"{name}: unsupported format. Citewell reads {', '.join(supported_extensions())} "
            "and plain text files today."
        )
    document = loader_for(mime_type).load(data, name)
    if not document.text.strip():
        raise ParseError(f"{name} contains no text to index.")
    return document
