"""The ``enrichment`` section: lLM-written chunk contexts and document summaries."""

from __future__ import annotations

from citewell.config.fields import Scopes, Section, setting


class EnrichmentSection(Section):
    """What the LLM adds to chunks before they are indexed (contexts, summaries)."""

    contextual_chunks: bool = setting(
        False,
        "Contextual retrieval (seed 002): the LLM writes a short context for each chunk from "
        "its document; the context is embedded and indexed for BM25 with the chunk, never "
        "shown as its text. One LLM call per chunk, cached; needs an LLM.",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    contextual_prompt: str = setting(
        "",
        "Prompt for contextual_chunks; {{WHOLE_DOCUMENT}} and {{CHUNK_CONTENT}} are replaced. "
        "Empty: the seed's prompt.",
        scopes=Scopes(runtime=True),
    )

    document_summary: bool = setting(
        False,
        "The LLM summarises each document once (cached); the summary is put in front of each "
        "of its chunks for embedding and BM25 (seed 001), never shown as chunk text.",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    summary_prompt: str = setting(
        "",
        "Prompt for document_summary; {{WHOLE_DOCUMENT}} is replaced. Empty: the built-in one.",
        scopes=Scopes(runtime=True),
    )

    contextual_model: str = setting(
        "",
        "Model for contexts and summaries. Empty: llm_model (or the LLM's only model).",
        scopes=Scopes(runtime=True),
    )

    contextual_document_tokens: int = setting(
        6000,
        "Most of a document (in approximate tokens, 4 characters each) put in a context or "
        "summary prompt; a longer document is represented by the part around the chunk.",
        ge=200,
        scopes=Scopes(runtime=True),
    )

    contextual_concurrency: int = setting(
        4,
        "LLM calls made at once for one document's chunk contexts.",
        ge=1,
        le=64,
        scopes=Scopes(runtime=True),
    )
