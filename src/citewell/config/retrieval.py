"""The ``retrieval`` section: how a search finds and ranks chunks."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from citewell.config.fields import Scopes, Section, setting


class RetrievalSection(Section):
    """How searches find and rank chunks."""

    hybrid_search: bool = setting(
        True,
        "Default search mode: hybrid (vector + BM25, fused) when true, vector when false.",
        "ENABLE_RAG_HYBRID_SEARCH",
        scopes=Scopes(runtime=True, kb=True, request=True),
    )

    top_k: int = setting(
        8,
        "Chunks returned by a search (and put in an answer's context).",
        "RAG_TOP_K",
        scopes=Scopes(runtime=True, kb=True, request=True),
    )

    candidate_k: int = setting(
        50,
        "Candidates each retriever hands to fusion and reranking; larger than top_k so "
        "fusion and the reranker have something to choose from.",
        scopes=Scopes(runtime=True, kb=True),
    )

    fusion: Literal["rrf", "weighted"] = setting(
        "weighted",
        "How hybrid search merges the two lists: 'weighted' (sum of min-max-normalised "
        "scores, weighted by hybrid_bm25_weight) or 'rrf' (weighted reciprocal-rank fusion).",
        scopes=Scopes(runtime=True),
    )

    rrf_k: int = setting(
        60, "The k constant of reciprocal-rank fusion.", scopes=Scopes(runtime=True)
    )

    query_max_tokens: int = setting(
        256,
        "Longest search query, in tokens: longer ones are cut (a chat question keeps its "
        "end, where the question usually is; other searches keep the start). Bounds the "
        "work one request can cause.",
    )

    hybrid_bm25_weight: float = setting(
        0.5,
        "Weight of BM25 in hybrid fusion (0..1); the vector list gets 1 minus this.",
        "RAG_HYBRID_BM25_WEIGHT",
        scopes=Scopes(runtime=True, kb=True),
    )

    relevance_threshold: float = setting(
        0.0,
        "Drop results whose relevance is below this (0..1): the reranker's score when "
        "one is configured, else the fused score normalised to 0..1.",
        "RAG_RELEVANCE_THRESHOLD",
        scopes=Scopes(runtime=True, kb=True, request=True),
    )

    bm25_stemmer: str = setting(
        "english",
        "Snowball stemmer for BM25 terms ('none' to disable). Changing it requires re-ingesting.",
    )

    bm25_enriched_texts: bool = setting(
        False,
        "Also index each chunk's file name and document title for BM25 (its heading path "
        "always is), as Open WebUI's enriched texts do. Applies to files ingested from then on.",
        "ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS",
        scopes=Scopes(kb_files=True),
    )

    sentence_vectors: bool = setting(
        False,
        "Also embed each chunk's sentences, two at a time, and search them beside the "
        "chunks: a chunk whose best pair matches the query ranks higher (SciFact nDCG@10 "
        "+0.016). Costs about 5x the vectors and 2-3x the embedding time at ingestion. "
        "Applies to files ingested from then on; a knowledge base may set it for itself.",
        scopes=Scopes(kb_files=True),
    )

    @model_validator(mode="after")
    def _check_sizes(self) -> RetrievalSection:
        if not 0 <= self.hybrid_bm25_weight <= 1:
            raise ValueError("hybrid_bm25_weight must lie between 0 and 1")
        if self.top_k < 1 or self.candidate_k < 1:
            raise ValueError("top_k and candidate_k must be at least 1")
        if self.query_max_tokens < 1:
            raise ValueError("query_max_tokens must be at least 1")
        return self
