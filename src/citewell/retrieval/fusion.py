"""Pure functions that merge ranked lists. No I/O, no state."""

from __future__ import annotations

from collections.abc import Sequence

RankedIds = Sequence[tuple[str, float]]  # (chunk id, score), best first


def reciprocal_rank_fusion(
    lists: Sequence[RankedIds], weights: Sequence[float], k: int = 60
) -> dict[str, float]:
    """Weighted RRF (Cormack et al., 2009): score = sum_i w_i / (k + rank_i), rank from 1.

    Returned scores are divided by the best possible score (first in every list), so they
    lie in 0..1 and a relevance threshold means the same thing whatever k is.
    """
    best = sum(w / (k + 1) for w in weights) or 1.0
    fused: dict[str, float] = {}
    for ranked, weight in zip(lists, weights, strict=True):
        for rank, (chunk_id, _score) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (k + rank)
    return {chunk_id: score / best for chunk_id, score in fused.items()}


def min_max(ranked: RankedIds) -> dict[str, float]:
    """Scores rescaled to 0..1 within one list (all 1.0 when they are equal)."""
    if not ranked:
        return {}
    scores = [score for _, score in ranked]
    low, high = min(scores), max(scores)
    span = high - low
    return {cid: (score - low) / span if span else 1.0 for cid, score in ranked}


def weighted_score_fusion(lists: Sequence[RankedIds], weights: Sequence[float]) -> dict[str, float]:
    """Convex combination of min-max-normalised scores; a list that missed a chunk adds 0."""
    total = sum(weights) or 1.0
    fused: dict[str, float] = {}
    for ranked, weight in zip(lists, weights, strict=True):
        for chunk_id, score in min_max(ranked).items():
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * score / total
    return fused


def top(scores: dict[str, float], k: int) -> list[tuple[str, float]]:
    """The ``k`` best (id, score) pairs, ties broken by id so results are deterministic."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
