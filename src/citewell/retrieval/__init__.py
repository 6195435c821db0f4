"""Retrieval: the hybrid retriever, rank fusion and the BM25 tokenizer.

Exports are imported on first use (``citewell.lazy_exports``): a file split where it is read
needs the tokenizer, not the retriever and the stores it searches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citewell.lazy_exports import lazy_exports

if TYPE_CHECKING:  # names re-exported for type checkers
    from citewell.retrieval.fusion import reciprocal_rank_fusion as reciprocal_rank_fusion
    from citewell.retrieval.fusion import weighted_score_fusion as weighted_score_fusion
    from citewell.retrieval.retriever import HybridRetriever as HybridRetriever
    from citewell.retrieval.retriever import Ranking as Ranking
    from citewell.retrieval.retriever import RetrievalSettings as RetrievalSettings
    from citewell.retrieval.retriever import RetrievalTrace as RetrievalTrace
    from citewell.retrieval.tokenize import terms_string as terms_string
    from citewell.retrieval.tokenize import tokenize as tokenize

_EXPORTS = {
    "reciprocal_rank_fusion": "citewell.retrieval.fusion",
    "weighted_score_fusion": "citewell.retrieval.fusion",
    "HybridRetriever": "citewell.retrieval.retriever",
    "Ranking": "citewell.retrieval.retriever",
    "RetrievalSettings": "citewell.retrieval.retriever",
    "RetrievalTrace": "citewell.retrieval.retriever",
    "terms_string": "citewell.retrieval.tokenize",
    "tokenize": "citewell.retrieval.tokenize",
}

__all__ = list(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
