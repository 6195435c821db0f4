"""Embedders: the protocol, the built-ins, the cache, and the registry (``registry.py``)."""

from __future__ import annotations

from citewell.embedders.base import Embedder, Vectors, normalize
from citewell.embedders.cache import (
    CachedEmbedder,
    DatabaseEmbeddingCache,
    EmbeddingCache,
    VectorCache,
    embedding_tenant,
)
from citewell.embedders.onnx import OnnxEmbedder
from citewell.embedders.registry import EMBEDDERS, build_embedder
from citewell.embedders.remote import OllamaEmbedder, OpenAIEmbedder

__all__ = [
    "EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "DatabaseEmbeddingCache",
    "EmbeddingCache",
    "VectorCache",
    "OllamaEmbedder",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "Vectors",
    "build_embedder",
    "embedding_tenant",
    "normalize",
]
