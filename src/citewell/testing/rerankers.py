"""The reranker role's conformance suite. Subclass it and give a ``reranker`` fixture."""

from __future__ import annotations

from citewell.rerankers.base import Reranker
from citewell.types import ScoredChunk, StoredChunk

TEXTS = (
    "The cafeteria serves lunch from noon.",
    "Parental leave lasts sixteen weeks at full pay.",
    "Remote work is allowed two days a week.",
)


def candidates(*texts: str) -> list[ScoredChunk]:
    """Search results to rerank, first-stage scores descending."""
    return [
        ScoredChunk(
            f"c{i}",
            1.0 - i / 10,
            StoredChunk(
                id=f"c{i}",
                file_id="f",
                kb_ids=("k",),
                index=i,
                text=t,
                start=0,
                end=len(t),
                page=None,
                headings=(),
                file_name="f.md",
                terms="",
            ),
        )
        for i, t in enumerate(texts)
    ]


class RerankerConformance:
    def test_scores_every_candidate_and_sorts_best_first(self, reranker: Reranker) -> None:
        ranked = reranker.rerank("how long is parental leave", candidates(*TEXTS), 3)
        assert sorted(c.chunk_id for c in ranked) == ["c0", "c1", "c2"]
        scores = [c.rerank_score for c in ranked]
        assert all(isinstance(s, float) for s in scores)
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]

    def test_keeps_top_k(self, reranker: Reranker) -> None:
        assert len(reranker.rerank("leave", candidates(*TEXTS), 2)) == 2

    def test_no_candidates(self, reranker: Reranker) -> None:
        assert reranker.rerank("leave", [], 5) == []

    def test_chunks_come_back_unchanged(self, reranker: Reranker) -> None:
        given = candidates(*TEXTS)
        ranked = reranker.rerank("lunch", given, 3)
        by_id = {c.chunk_id: c.chunk for c in given}
        assert all(c.chunk == by_id[c.chunk_id] for c in ranked)
