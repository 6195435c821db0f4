"""Sentence vectors at search time: pair hits read as their chunks' best pair.

A chunk's sentence pairs are stored under ids ``{chunk id}.{n}`` (``pipeline.sentences``),
so a pair found maps to its chunk without reading a row. Measured on SciFact (BENCHMARKS.md,
"Sentence vectors beside chunk vectors"), the pairs earn most as a third list in fusion,
taking half of the vector weight: a chunk that one sentence makes relevant is found even when
its whole-chunk vector ranks it below the candidate pool.
"""

from __future__ import annotations

from collections.abc import Sequence

from citewell.stores.base import ChunkStore, SearchHit

SENTENCE_SHARE = 0.5  # of the vector list's weight in fusion (best on SciFact's train split)
PAIRS_PER_CHUNK = 2  # pairs read per chunk wanted (4 found the same on SciFact, slower)


def sentence_id(chunk_id: str, n: int) -> str:
    return f"{chunk_id}.{n}"


def chunk_of(sentence_id: str) -> str:
    return sentence_id.rpartition(".")[0] or sentence_id


def best_per_chunk(hits: Sequence[SearchHit], k: int) -> list[SearchHit]:
    """Pair hits (best first) as the ``k`` chunks they belong to, each scored by its best."""
    out: list[SearchHit] = []
    seen: set[str] = set()
    for hit in hits:
        chunk_id = chunk_of(hit.chunk_id)
        if chunk_id not in seen:
            seen.add(chunk_id)
            out.append(SearchHit(chunk_id, hit.score, len(out)))
            if len(out) == k:
                break
    return out


def with_pairless(
    pairs: ChunkStore, vector_hits: Sequence[SearchHit], best: Sequence[SearchHit]
) -> list[SearchHit]:
    """``best`` with the vector hits whose chunks have no pairs (a KB that embeds none, or
    a file ingested before the switch) scored by their own vector: else a search over KBs
    with and without pairs would give the latter half the vector weight. Every chunk with
    pairs has a pair 0 (``pipeline.sentences``), so one read of those ids tells them apart;
    a chunk with pairs that missed ``best`` stays out, as its best pair ranked too low."""
    listed = {h.chunk_id for h in best}
    missing = [h for h in vector_hits if h.chunk_id not in listed]
    if not best or not missing:
        return list(best)
    paired = {chunk_of(row.id) for row in pairs.get([sentence_id(h.chunk_id, 0) for h in missing])}
    merged = sorted([*best, *(h for h in missing if h.chunk_id not in paired)], key=_by_score)
    return [SearchHit(h.chunk_id, h.score, rank) for rank, h in enumerate(merged)]


def _by_score(hit: SearchHit) -> float:
    return -hit.score


def weights(bm25_weight: float, with_sentences: bool) -> list[float]:
    """Fusion weights of the lists [vector, (sentences,) keyword]."""
    vector = 1.0 - bm25_weight
    if not with_sentences:
        return [vector, bm25_weight]
    return [vector * (1 - SENTENCE_SHARE), vector * SENTENCE_SHARE, bm25_weight]
