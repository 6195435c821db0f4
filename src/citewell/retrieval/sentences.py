"""Sentence vectors at search time: pair hits read as their chunks' best pair.

A chunk's sentence pairs are stored under ids ``{chunk id}.{n}`` (``pipeline.sentences``),
so a pair found maps to its chunk without reading a row. Measured on SciFact (BENCHMARKS.md,
"Sentence vectors beside chunk vectors"), the pairs earn most as a third list in fusion,
taking half of the vector weight: a chunk that one sentence makes relevant is found even when
its whole-chunk vector ranks it below the candidate pool.
"""

from __future__ import annotations

from collections.abc import Sequence

from citewell.stores.base import SearchHit

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


def weights(bm25_weight: float, with_sentences: bool) -> list[float]:
    """Fusion weights of the lists [vector, (sentences,) keyword]."""
    vector = 1.0 - bm25_weight
    if not with_sentences:
        return [vector, bm25_weight]
    return [vector * (1 - SENTENCE_SHARE), vector * SENTENCE_SHARE, bm25_weight]
