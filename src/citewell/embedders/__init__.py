"""Embedders: the protocol, the built-ins, the cache, and the registry (``registry.py``).

Exports are imported on first use (``citewell.lazy_exports``): the splitters need the
protocol, not the ONNX runtime or the HTTP clients.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citewell.lazy_exports import lazy_exports

if TYPE_CHECKING:  # names re-exported for type checkers
    from citewell.embedders.base import Embedder as Embedder
    from citewell.embedders.base import Vectors as Vectors
    from citewell.embedders.base import normalize as normalize
    from citewell.embedders.cache import CachedEmbedder as CachedEmbedder
    from citewell.embedders.cache import DatabaseEmbeddingCache as DatabaseEmbeddingCache
    from citewell.embedders.cache import EmbeddingCache as EmbeddingCache
    from citewell.embedders.cache import VectorCache as VectorCache
    from citewell.embedders.cache import embedding_tenant as embedding_tenant
    from citewell.embedders.onnx import OnnxEmbedder as OnnxEmbedder
    from citewell.embedders.registry import EMBEDDERS as EMBEDDERS
    from citewell.embedders.registry import build_embedder as build_embedder
    from citewell.embedders.remote import OllamaEmbedder as OllamaEmbedder
    from citewell.embedders.remote import OpenAIEmbedder as OpenAIEmbedder

_EXPORTS = {
    "Embedder": "citewell.embedders.base",
    "Vectors": "citewell.embedders.base",
    "normalize": "citewell.embedders.base",
    "CachedEmbedder": "citewell.embedders.cache",
    "DatabaseEmbeddingCache": "citewell.embedders.cache",
    "EmbeddingCache": "citewell.embedders.cache",
    "VectorCache": "citewell.embedders.cache",
    "embedding_tenant": "citewell.embedders.cache",
    "OnnxEmbedder": "citewell.embedders.onnx",
    "EMBEDDERS": "citewell.embedders.registry",
    "build_embedder": "citewell.embedders.registry",
    "OllamaEmbedder": "citewell.embedders.remote",
    "OpenAIEmbedder": "citewell.embedders.remote",
}

__all__ = list(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
