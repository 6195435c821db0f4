"""Embedders by registry name (``embedding_engine``): the built-ins register here, plug-ins
through the entry point group ``citewell.embedders``."""

from __future__ import annotations

from collections.abc import Callable

from citewell.config import EmbeddingSection, Settings
from citewell.embedders.base import Embedder
from citewell.embedders.onnx import OnnxEmbedder
from citewell.embedders.remote import OllamaEmbedder, OpenAIEmbedder
from citewell.plugins import Registry

EMBEDDERS: Registry[Callable[[EmbeddingSection], Embedder]] = Registry("embedders")


@EMBEDDERS.register("onnx")
def _onnx(section: EmbeddingSection) -> Embedder:
    return OnnxEmbedder(
        model_path=section.embedding_onnx_path,
        tokenizer_path=section.embedding_tokenizer_path,
        batch_size=section.embedding_batch_size,
        max_tokens=section.embedding_max_tokens,
        threads=section.embedding_threads,
    )


def _remote(
    kind: type[OpenAIEmbedder] | type[OllamaEmbedder],
) -> Callable[[EmbeddingSection], Embedder]:
    def build(section: EmbeddingSection) -> Embedder:
        return kind(
            base_url=section.embedding_base_url,
            model=section.embedding_model,
            api_key=section.embedding_api_key,
            batch_size=section.embedding_batch_size,
            timeout=section.embedding_timeout,
        )

    return build


EMBEDDERS.add("openai", _remote(OpenAIEmbedder))
EMBEDDERS.add("ollama", _remote(OllamaEmbedder))


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name, without the cache (the engine adds it)."""
    return EMBEDDERS.get(settings.embedding.embedding_engine)(settings.embedding)
