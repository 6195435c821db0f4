"""Which settings a knowledge base or an admin at run time may set, and Open WebUI's names
for them (``TOP_K`` → ``top_k``) as its retrieval config API sends them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from citewell.config import Settings
from citewell.errors import InvalidInput

# Which settings are which is each field's metadata (config.fields.Scopes).
# What a knowledge base may set for itself (its files are split and indexed with them).
KB_CHUNKING = Settings.names_where(kb_files=True)
# What may change without a restart; the rest (storage, models, limits, auth) may not.
RUNTIME_SETTINGS = Settings.names_where(runtime=True)
# Open WebUI's names in GET/POST /api/v1/retrieval/config (and its task config) → ours.
OPEN_WEBUI_NAMES = {
    "RAG_TEMPLATE": "rag_template",
    "TOP_K": "top_k",
    "RAG_FULL_CONTEXT": "rag_full_context",
    "ENABLE_RAG_HYBRID_SEARCH": "hybrid_search",
    "TOP_K_RERANKER": "top_k_reranker",
    "RELEVANCE_THRESHOLD": "relevance_threshold",
    "HYBRID_BM25_WEIGHT": "hybrid_bm25_weight",
    "RAG_RERANKING_ENGINE": "reranker",
    "RAG_RERANKING_MODEL": "reranking_model",
    "RAG_EXTERNAL_RERANKER_URL": "reranker_url",
    "RAG_EXTERNAL_RERANKER_API_KEY": "reranker_api_key",
    "TEXT_SPLITTER": "text_splitter",
    "CHUNK_SIZE": "chunk_size",
    "CHUNK_OVERLAP": "chunk_overlap",
    "ENABLE_RETRIEVAL_QUERY_GENERATION": "enable_retrieval_query_generation",
    "QUERY_GENERATION_PROMPT_TEMPLATE": "query_generation_prompt_template",
}


def check_kb_chunking(own: Mapping[str, Any]) -> None:
    unknown = sorted(set(own) - set(KB_CHUNKING))
    if unknown:
        raise InvalidInput(
            f"{', '.join(unknown)} cannot be set per knowledge base; its chunking may set "
            f"{', '.join(KB_CHUNKING)}."
        )


READ_ONLY_KEYS = ("status", "changed", "start")  # in GET's answer; a client may post it back
MASK = "********"


def runtime_changes(body: Mapping[str, Any]) -> dict[str, Any]:
    """Changes named by Open WebUI's keys (``TOP_K``) or Citewell's (``top_k``), also nested
    under ``settings`` as GET /api/v1/retrieval/config shows them. A masked secret posted
    back unchanged is no change."""
    changes: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in body.items():
        if key == "settings" and isinstance(value, Mapping):
            changes.update(runtime_changes(value))
        elif key in READ_ONLY_KEYS:
            continue
        elif key in OPEN_WEBUI_NAMES or key in RUNTIME_SETTINGS:
            changes[OPEN_WEBUI_NAMES.get(key, key)] = value
        else:
            unknown.append(key)
    if unknown:
        raise InvalidInput(
            f"Unknown or fixed settings: {', '.join(sorted(unknown))}. These change at run "
            f"time: {', '.join(RUNTIME_SETTINGS)} (or Open WebUI's "
            f"{', '.join(OPEN_WEBUI_NAMES)}); the rest are set at start-up."
        )
    return {k: v for k, v in changes.items() if not (k.endswith("_api_key") and v == MASK)}
