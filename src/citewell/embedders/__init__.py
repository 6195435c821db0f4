"""Embedders by registry name (``embedding_engine``), built from settings."""

from __future__ import annotations

from collections.abc import Callable

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
from citewell.plugins import Registry

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


EMBEDDERS: Registry[Callable[[Settings], Embedder]] = Registry("embedders")


@EMBEDDERS.register("onnx")
def _onnx(settings: Settings) -> Embedder:
    return OnnxEmbedder(
        model_path=settings.embedding.embedding_onnx_path,
        tokenizer_path=settings.embedding.embedding_tokenizer_path,
        batch_size=settings.embedding.embedding_batch_size,
        max_tokens=settings.embedding.embedding_max_tokens,
        threads=settings.embedding.embedding_threads,
    )


def _remote(kind: type[OpenAIEmbedder] | type[OllamaEmbedder]) -> Callable[[Settings], Embedder]:
    def build(settings: Settings) -> Embedder:
        return kind(
            base_url=settings.embedding.embedding_base_url,
            model=settings.embedding.embedding_model,
            api_key=settings.embedding.embedding_api_key,
            batch_size=settings.embedding.embedding_batch_size,
            timeout=settings.embedding.embedding_timeout,
        )

    return build


EMBEDDERS.add("openai", _remote(OpenAIEmbedder))
EMBEDDERS.add("ollama", _remote(OllamaEmbedder))


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name, without the cache (the engine adds it)."""
    return EMBEDDERS.get(settings.embedding.embedding_engine)(settings)
