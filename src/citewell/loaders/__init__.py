"""Loaders by MIME type. Adding a format: write a Loader and register it (loaders/registry.py,
or an entry point in the group ``citewell.loaders``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import lru_cache
from typing import TypeVar

from citewell.errors import CitewellError, ParseError, PayloadTooLarge, UnsupportedFormat
from citewell.loaders.after import AfterRead, after_read, as_read
from citewell.loaders.base import EXTENSIONS, Loader, sniff
from citewell.loaders.ocr import OcrEngine, build_ocr
from citewell.loaders.registry import LOADERS, LoaderContext, build_loaders, plugin_extensions
from citewell.types import Document

__all__ = [
    "LOADERS",
    "AfterRead",
    "DocumentReader",
    "LoaderContext",
    "Loader",
    "load_bytes",
    "sniff",
    "supported_extensions",
]

DEFAULT_MAX_CHARS = 20_000_000
PLAIN_TYPES = frozenset({"text/plain", "text/markdown", "text/csv", "application/json"})
logger = logging.getLogger(__name__)
T = TypeVar("T")


class DocumentReader:
    """Every loader, wired with the OCR engine: bytes and a name in, a Document out."""

    def __init__(
        self, ocr: OcrEngine | None = None, dpi: int = 200, max_chars: int = DEFAULT_MAX_CHARS
    ) -> None:
        self.max_chars = max_chars
        self.loaders: list[Loader] = build_loaders(LoaderContext(ocr, dpi, self.read))
        self.extensions = plugin_extensions()

    def loader_for(self, mime_type: str) -> Loader:
        for loader in self.loaders:
            if mime_type in loader.mime_types:
                return loader
        raise UnsupportedFormat(f"No loader for {mime_type}.")

    def render(self, data: bytes, page: int, width: int) -> bytes:
        """A PDF's page as a PNG (the viewer's page view)."""
        from citewell.loaders.pdf import render_page

        return render_page(data, page, width)

    def close(self) -> None:
        """Nothing to stop: it reads in this process (the isolated readers have workers)."""

    def read(self, data: bytes, name: str) -> Document:
        """Detect the format and extract the text; errors are typed and say what to do."""
        if not data:
            raise ParseError(f"{name} is empty (0 bytes); nothing to index.")
        mime_type = sniff(data, name, self.extensions)
        if mime_type is None:
            raise UnsupportedFormat(
                f"{name}: unsupported format. Citewell reads "
                f"{', '.join(supported_extensions())} and plain text files."
            )
        if mime_type in PLAIN_TYPES and len(data) > 4 * self.max_chars:
            raise PayloadTooLarge(  # refused before decoding: a huge text file costs nothing
                f"{name} is {len(data):,} bytes of text, more than max_document_chars "
                f"({self.max_chars:,} characters) allows: split it, or raise the limit."
            )
        try:
            document = self.loader_for(mime_type).load(data, name)
        except CitewellError:
            raise
        except Exception as exc:  # a parser's bug on bad bytes (MemoryError, RecursionError…)
            logger.warning("loader for %s failed on %s", mime_type, name, exc_info=True)
            raise ParseError(f"{name} could not be read ({type(exc).__name__}: {exc}).") from exc
        if len(document.text) > self.max_chars:
            raise PayloadTooLarge(
                f"{name} holds {len(document.text):,} characters of text, more than "
                f"max_document_chars ({self.max_chars:,}): split it, or raise the limit."
            )
        if not document.text.strip():
            raise ParseError(f"{name} contains no text to index.")
        return document

    def read_many(self, files: Sequence[tuple[bytes, str]]) -> list[Document | CitewellError]:
        """Each ``(data, name)``'s Document, or the error that says why it has none."""
        return self.read_each(files, as_read)

    def read_each(
        self, files: Sequence[tuple[bytes, str]], after: AfterRead[T]
    ) -> list[T | CitewellError]:
        """Each ``(data, name)``'s ``after(document, index)``, or the error that says why it
        has none."""
        made: list[T | CitewellError] = []
        for index, (data, name) in enumerate(files):
            try:
                made.append(after_read(after, self.read(data, name), index))
            except CitewellError as exc:
                made.append(exc)
        return made


def supported_extensions() -> list[str]:
    """What a folder walk picks up: every extension a built-in or plug-in loader reads."""
    return sorted({*EXTENSIONS, *plugin_extensions()})


@lru_cache(maxsize=1)
def default_reader() -> DocumentReader:
    return DocumentReader(build_ocr("auto"))


def load_bytes(data: bytes, name: str) -> Document:
    """Extract with the default reader (OCR: whatever engine is installed)."""
    return default_reader().read(data, name)
