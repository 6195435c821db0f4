"""Kept for plug-ins written for Citewell 0.2.0, which imported the sources role from here:
it now lives in ``citewell.sources`` (``base`` for ``Source``, ``SourceRequest`` and
``SourceContext``; ``registry`` for ``SOURCES``). Import from there in new code."""

from citewell.sources.base import Source, SourceContext, SourceRequest
from citewell.sources.registry import SOURCES, gather, source_of

__all__ = ["SOURCES", "Source", "SourceContext", "SourceRequest", "gather", "source_of"]
