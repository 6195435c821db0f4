"""The reranker role: reorder candidates by a finer relevance model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from citewell.types import ScoredChunk


class Reranker(Protocol):
    def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], top_k: int
    ) -> list[ScoredChunk]: ...


def apply_scores(
    candidates: Sequence[ScoredChunk], scores: Sequence[float], top_k: int
) -> list[ScoredChunk]:
    """Candidates with their rerank scores set, best first, cut to ``top_k``."""
    rescored = [replace(c, rerank_score=float(s)) for c, s in zip(candidates, scores, strict=True)]
    rescored.sort(key=lambda c: -(c.rerank_score or 0.0))
    return rescored[:top_k]
