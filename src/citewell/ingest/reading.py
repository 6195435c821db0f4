"""The document reader the extraction settings ask for."""

from __future__ import annotations

from citewell.config import Settings
from citewell.loaders import DocumentReader
from citewell.loaders.isolated import ReaderConfig, ReaderPool


def reader_from_settings(settings: Settings) -> DocumentReader | ReaderPool:
    """The extraction settings as a reader: in limited worker processes (extract_workers of
    them) unless turned off."""
    config = ReaderConfig(
        ocr_engine=settings.extraction.ocr_engine,
        ocr_languages=settings.extraction.ocr_languages,
        ocr_dpi=settings.extraction.ocr_dpi,
        max_chars=settings.extraction.max_document_chars,
        timeout=settings.extraction.extract_timeout,
        memory_mb=settings.extraction.extract_memory_mb,
    )
    if settings.extraction.extract_isolated:
        return ReaderPool(config, settings.extraction.extract_workers)
    return config.reader()
