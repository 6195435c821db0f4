"""Text an LLM writes to help retrieval: chunk contexts and document summaries."""

from citewell.enrich.cache import ContextCache
from citewell.enrich.contextual import (
    CONTEXT_PROMPT,
    SUMMARY_PROMPT,
    EnrichConfig,
    EnrichCost,
    Enricher,
    Enrichment,
    stored_enrichment,
)

__all__ = [
    "CONTEXT_PROMPT",
    "SUMMARY_PROMPT",
    "ContextCache",
    "EnrichConfig",
    "EnrichCost",
    "Enricher",
    "Enrichment",
    "stored_enrichment",
]
