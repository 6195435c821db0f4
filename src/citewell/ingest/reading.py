"""The document reader the extraction settings ask for."""

from __future__ import annotations

from citewell.config import Settings
from citewell.loaders import DocumentReader
from citewell.loaders.isolated import IsolatedReader, ReaderConfig, ReaderPool
from citewell.loaders.rendering import RenderLimits, RenderPool


def reader_from_settings(settings: Settings) -> DocumentReader | ReaderPool:
    """The extraction settings as a reader: in limited worker processes (extract_workers of
    them) unless turned off."""
    config = _config(settings)
    if settings.extraction.extract_isolated:
        return ReaderPool(config, settings.extraction.extract_workers)
    return config.reader()


def render_pool(
    settings: Settings, reader: DocumentReader | IsolatedReader | ReaderPool
) -> RenderPool:
    """The viewer's page renders: worker processes of their own when extraction is isolated
    (else ``reader`` draws them in this process), fairly shared between users."""
    section = settings.extraction
    limits = RenderLimits(section.render_workers, section.render_timeout, section.render_per_user)
    isolated = section.extract_isolated and isinstance(reader, IsolatedReader | ReaderPool)
    return RenderPool(_config(settings), limits, None if isolated else reader)


def _config(settings: Settings) -> ReaderConfig:
    return ReaderConfig(
        ocr_engine=settings.extraction.ocr_engine,
        ocr_languages=settings.extraction.ocr_languages,
        ocr_dpi=settings.extraction.ocr_dpi,
        max_chars=settings.extraction.max_document_chars,
        timeout=settings.extraction.extract_timeout,
        memory_mb=settings.extraction.extract_memory_mb,
    )
