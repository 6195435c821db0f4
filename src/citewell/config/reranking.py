"""The ``reranking`` section: the reranker that reorders retrieved chunks."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import field_validator

from citewell.config.fields import Scopes, Section, backend, setting


class RerankingSection(Section):
    """The reranker applied after fusion."""

    reranker: Annotated[str, backend("rerankers", "none", "cross_encoder", "http")] = setting(
        "none",
        "'cross_encoder' runs a local model directory; 'http' (Open WebUI's 'external') calls a "
        "Cohere/Jina/TEI style rerank API.",
        "RAG_RERANKING_ENGINE",
        scopes=Scopes(runtime=True, kb=True),
    )

    reranking_model: str = setting(
        "",
        "For 'cross_encoder': a local directory holding model.onnx (or onnx/model.onnx) and "
        "tokenizer.json; for 'http': the model name sent.",
        "RAG_RERANKING_MODEL",
        scopes=Scopes(runtime=True),
    )

    reranker_url: str = setting(
        "",
        "For 'http': the full rerank endpoint URL.",
        "RAG_EXTERNAL_RERANKER_URL",
        scopes=Scopes(runtime=True),
    )

    reranker_api_key: str = setting(
        "",
        "For 'http': Bearer token.",
        "RAG_EXTERNAL_RERANKER_API_KEY",
        scopes=Scopes(runtime=True),
    )

    top_k_reranker: int = setting(
        8, "Chunks kept after reranking.", "RAG_TOP_K_RERANKER", scopes=Scopes(runtime=True)
    )

    @field_validator("reranker", mode="before")
    @classmethod
    def _owui_reranker_names(cls, value: Any) -> Any:
        # Open WebUI's RAG_RERANKING_ENGINE: "" (its local model; none here without a local
        # model directory) or "external" (an HTTP rerank API).
        if not isinstance(value, str):
            return value
        return {"": "none", "external": "http"}.get(value, value)
