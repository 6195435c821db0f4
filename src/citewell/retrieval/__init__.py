from citewell.retrieval.fusion import reciprocal_rank_fusion, weighted_score_fusion
from citewell.retrieval.retriever import (
    HybridRetriever,
    Ranking,
    RetrievalSettings,
    RetrievalTrace,
)
from citewell.retrieval.tokenize import terms_string, tokenize

__all__ = [
    "HybridRetriever",
    "Ranking",
    "RetrievalSettings",
    "RetrievalTrace",
    "reciprocal_rank_fusion",
    "terms_string",
    "tokenize",
    "weighted_score_fusion",
]
