"""Embedders by registry name, built from settings."""

from __future__ import annotations

from citewell.config import Settings
from citewell.embedders.base import Embedder, Vectors, normalize
from citewell.embedders.cache import (
    CachedEmbedder,
    DatabaseEmbeddingCache,
    EmbeddingCache,
    VectorCache,
    embedding_tenant,
)
from citewell.embedders.onnx import OnnxEmbedder
from citewell.embedders.remote import OllamaEmbedder, OpenAIEmbedder

__all__ = [
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


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name, without the cache (the pipeline adds it)."""
    if settings.embedding_engine == "onnx":
        return OnnxEmbedder(
            model_path=settings.embedding_onnx_path,
            tokenizer_path=settings.embedding_tokenizer_path,
            batch_size=settings.embedding_batch_size,
            max_tokens=settings.embedding_max_tokens,
            threads=settings.embedding_threads,
        )
    remote = OpenAIEmbedder if settings.embedding_engine == "openai" else OllamaEmbedder
    return remote(
        base_url=settings.embedding_base_url,
        model=settings.embedding_model,
        api_key=settings.embedding_api_key,
        batch_size=settings.embedding_batch_size,
        timeout=settings.embedding_timeout,
    )
