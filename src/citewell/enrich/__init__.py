"""Text an LLM writes to help retrieval: chunk contexts and document summaries.

Exports are imported on first use (``citewell.lazy_exports``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citewell.lazy_exports import lazy_exports

if TYPE_CHECKING:  # names re-exported for type checkers
    from citewell.enrich.cache import ContextCache as ContextCache
    from citewell.enrich.contextual import CONTEXT_PROMPT as CONTEXT_PROMPT
    from citewell.enrich.contextual import SUMMARY_PROMPT as SUMMARY_PROMPT
    from citewell.enrich.contextual import EnrichConfig as EnrichConfig
    from citewell.enrich.contextual import EnrichCost as EnrichCost
    from citewell.enrich.contextual import Enricher as Enricher
    from citewell.enrich.contextual import stored_enrichment as stored_enrichment
    from citewell.enrich.enrichment import Enrichment as Enrichment

_EXPORTS = {
    "ContextCache": "citewell.enrich.cache",
    "CONTEXT_PROMPT": "citewell.enrich.contextual",
    "SUMMARY_PROMPT": "citewell.enrich.contextual",
    "EnrichConfig": "citewell.enrich.contextual",
    "EnrichCost": "citewell.enrich.contextual",
    "Enricher": "citewell.enrich.contextual",
    "stored_enrichment": "citewell.enrich.contextual",
    "Enrichment": "citewell.enrich.enrichment",
}

__all__ = list(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
