"""OpenAI-style embeddings from the active embedding model, so Open WebUI (engine 'openai'),
LangChain, LlamaIndex and others can embed with Citewell: the vectors are the ones Citewell
stores for the same text (same model, same cache)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citewell.embedders import Vectors, embedding_tenant
from citewell.embedders.base import spare_a_core
from citewell.engine.core import Engine
from citewell.errors import InvalidInput, ModelNotFound

# Names clients use for the default model (its weights are all-MiniLM-L6-v2's).
MINILM_ALIASES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
COUNTED_TOKENS = 512  # tokens counted per input at most (the model reads 256)


@dataclass(frozen=True)
class Embeddings:
    vectors: Vectors
    tokens: int


def model_names(app: Engine) -> list[str]:
    """The names the active embedding model answers to."""
    model_id = app.embedder.model_id
    names = [model_id, app.settings.embedding.embedding_model]
    if model_id.startswith("onnx:all-MiniLM-L6-v2"):
        names.extend(MINILM_ALIASES)
    return list(dict.fromkeys(n for n in names if n))


def embed_inputs(
    app: Engine,
    model: str,
    inputs: Sequence[str | Sequence[int]],
    dimensions: int | None,
    tenant: str = "",
) -> Embeddings:
    """Vectors for ``inputs`` (texts, or token ids of the active model's tokenizer), from
    ``tenant``'s own part of the embedding cache."""
    names = model_names(app)
    if model not in names:
        raise ModelNotFound(
            f"No embedding model {model!r} here; the active one answers to: {', '.join(names)}."
        )
    if dimensions is not None and dimensions != app.embedder.dimension:
        raise InvalidInput(
            f"dimensions={dimensions}: this model makes {app.embedder.dimension}-dimensional "
            "vectors and cannot shorten them; leave dimensions out."
        )
    texts = [item if isinstance(item, str) else _decoded(app, item) for item in inputs]
    if not texts or any(not t.strip() for t in texts):
        raise InvalidInput("input must be one or more non-empty texts (or token-id lists).")
    measure = app.measure
    tokens = sum(measure.size(measure.clip(t, COUNTED_TOKENS)) for t in texts)
    # A client's batch leaves a core to everyone else's searches (issue 45: three 2,048-input
    # requests had moved another user's search p50 6x).
    with embedding_tenant(tenant), spare_a_core():
        return Embeddings(app.embedder.embed(texts, "document"), tokens)


def _decoded(app: Engine, ids: Sequence[int]) -> str:
    decode = getattr(app.measure, "decode", None)
    if decode is None:
        raise InvalidInput(
            "Token-id input needs the embedding model's own tokenizer, which this (remote) "
            "model does not share; send text instead."
        )
    try:
        text: str = decode(list(ids))
    except (OverflowError, ValueError, TypeError, RuntimeError, IndexError) as exc:
        raise InvalidInput(
            f"Token ids {list(ids)[:8]}… are not ids of this model's tokenizer; send text."
        ) from exc
    return text
