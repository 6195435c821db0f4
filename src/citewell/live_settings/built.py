"""What is built from the settings in force: the retriever's settings, the enricher's
configuration, the default search mode, a KB's ranking."""

from __future__ import annotations

from dataclasses import replace

from citewell.catalog.kb_settings import NO_SETTINGS, KnowledgeSettings
from citewell.config import Settings
from citewell.enrich import CONTEXT_PROMPT, SUMMARY_PROMPT, EnrichConfig
from citewell.errors import ConfigError
from citewell.retrieval import Ranking, RetrievalSettings
from citewell.types import SearchMode


def retrieval_settings(settings: Settings) -> RetrievalSettings:
    return RetrievalSettings(
        candidate_k=settings.retrieval.candidate_k,
        fusion=settings.retrieval.fusion,
        rrf_k=settings.retrieval.rrf_k,
        bm25_weight=settings.retrieval.hybrid_bm25_weight,
        relevance_threshold=settings.retrieval.relevance_threshold,
        top_k_reranker=settings.reranking.top_k_reranker,
        stemmer=settings.retrieval.bm25_stemmer,
    )


def needs_llm(has_llm: bool, settings: Settings) -> None:
    if not has_llm and (
        settings.enrichment.contextual_chunks or settings.enrichment.document_summary
    ):
        raise ConfigError(
            "contextual_chunks and document_summary need an LLM to write contexts and "
            "summaries: set llm_base_url (an OpenAI-compatible server or Ollama) or "
            "llm_model_path, or turn them off."
        )


def enrich_config(settings: Settings) -> EnrichConfig:
    return EnrichConfig(
        contexts=settings.enrichment.contextual_chunks,
        summary=settings.enrichment.document_summary,
        context_prompt=settings.enrichment.contextual_prompt or CONTEXT_PROMPT,
        summary_prompt=settings.enrichment.summary_prompt or SUMMARY_PROMPT,
        model=settings.enrichment.contextual_model or settings.llm.llm_model,
        document_tokens=settings.enrichment.contextual_document_tokens,
        concurrency=settings.enrichment.contextual_concurrency,
    )


def default_mode(settings: Settings) -> SearchMode:
    return SearchMode.HYBRID if settings.retrieval.hybrid_search else SearchMode.VECTOR


def kb_ranking(ranking: Ranking, own: KnowledgeSettings) -> Ranking:
    """The server's ranking with a KB's own candidate pool, BM25 weight and reranker choice."""
    if own == NO_SETTINGS:
        return ranking
    settings = ranking.settings
    if own.candidate_k is not None:
        settings = replace(settings, candidate_k=own.candidate_k)
    if own.hybrid_bm25_weight is not None:
        settings = replace(settings, bm25_weight=own.hybrid_bm25_weight)
    reranker = None if own.rerank is False else ranking.reranker
    return Ranking(settings, reranker)
