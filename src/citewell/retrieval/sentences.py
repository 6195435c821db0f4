"""Sentence vectors at search time: pair hits read as their chunks' best pair.

A chunk's sentence pairs are stored under ids ``{chunk id}.{n}`` (``ingest.sentences``),
so a pair found maps to its chunk without reading a row. Measured on SciFact
(docs/benchmarks/journal.md, "Sentence vectors beside chunk vectors"), the pairs earn most
as a third list in fusion, taking half of the vector weight: a chunk that one sentence makes
relevant is found even when its whole-chunk vector ranks it below the candidate pool.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import replace

from citewell.stores.base import ChunkStore, SearchHit
from citewell.types import ChunkFilter

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


class PairedLabels:
    """Which of a search's labels (KBs, chunk sets) hold sentence pairs, each counted in the
    pairs' table once per ``ttl`` seconds: a search over KBs with and without pairs ranks
    the latter's chunks by their own vector in the pairs' list (``stand_ins``), else they
    would fuse with half the vector weight. Another process's writes show within ``ttl``."""

    def __init__(self, ttl: float = 30.0) -> None:
        self.ttl = ttl
        self._store: ChunkStore | None = None
        self._known: dict[str | None, tuple[bool, float]] = {}
        self._lock = threading.Lock()

    def split(self, pairs: ChunkStore, where: ChunkFilter) -> tuple[ChunkFilter, ChunkFilter]:
        """``where`` cut into the labels with pairs and those without (either may hold no
        label). A search of every KB (no labels) counts as all with pairs; an empty table
        (the default) as none, without a count per label."""
        if not self._has(pairs, None):
            return replace(where, kb_ids=()), where
        if where.kb_ids is None:
            return where, replace(where, kb_ids=())
        has = {label: self._has(pairs, label) for label in where.kb_ids}
        with_pairs = tuple(label for label, yes in has.items() if yes)
        without = tuple(label for label, yes in has.items() if not yes)
        return replace(where, kb_ids=with_pairs), replace(where, kb_ids=without)

    def _has(self, pairs: ChunkStore, label: str | None) -> bool:
        """Whether the label (None: any label) has pairs, counted at most once a ttl."""
        now = time.monotonic()
        with self._lock:
            if self._store is not pairs:  # another model's space: its own tables
                self._store, self._known = pairs, {}
            known = self._known.get(label)
        if known is not None and now - known[1] < self.ttl:
            return known[0]
        has = pairs.count(ChunkFilter(kb_ids=None if label is None else (label,))) > 0
        with self._lock:
            self._known[label] = (has, now)
        return has


def stand_ins(best: Sequence[SearchHit], plain: Sequence[SearchHit]) -> list[SearchHit]:
    """The pairs' list with ``plain`` (chunks of labels without pairs, by their own vector)
    merged in by score: cosines of the same model, so the two compare."""
    if not plain:  # every KB searched has pairs: ``best`` is ranked already
        return list(best)
    merged: dict[str, float] = {}
    for hit in (*best, *plain):
        merged[hit.chunk_id] = max(hit.score, merged.get(hit.chunk_id, hit.score))
    ranked = sorted(merged.items(), key=lambda item: -item[1])
    return [SearchHit(chunk_id, score, rank) for rank, (chunk_id, score) in enumerate(ranked)]


def weights(bm25_weight: float, with_sentences: bool) -> list[float]:
    """Fusion weights of the lists [vector, (sentences,) keyword]."""
    vector = 1.0 - bm25_weight
    if not with_sentences:
        return [vector, bm25_weight]
    return [vector * (1 - SENTENCE_SHARE), vector * SENTENCE_SHARE, bm25_weight]
