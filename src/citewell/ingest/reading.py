"""The document reader the extraction settings ask for."""

from __future__ import annotations

from citewell.config import Settings
from citewell.loaders import DocumentReader
from citewell.loaders.isolated import ReaderConfig, ReaderPool


def reader_from_settings(settings: Settings) -> DocumentReader | ReaderPool:
    """The extraction settings as a reader: in limited worker processes (extract_workers of
    them) unless turned off."""
    config = ReaderConfig(
        ocr_engine=settings.ocr_engine,
        ocr_languages=settings.ocr_languages,
        ocr_dpi=settings.ocr_dpi,
        max_chars=settings.max_document_chars,
        timeout=settings.extract_timeout,
        memory_mb=settings.extract_memory_mb,
    )
    if settings.extract_isolated:
        return ReaderPool(config, settings.extract_workers)
    return config.reader()
