"""Vector, BM25 and hybrid retrieval over a chunk store, with fusion, rerank and threshold."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from citewell.embedders.base import Embedder
from citewell.metrics import count_stages
from citewell.rerankers.base import Reranker
from citewell.retrieval.fusion import (
    RankedIds,
    reciprocal_rank_fusion,
    top,
    weighted_score_fusion,
)
from citewell.retrieval.sentences import (
    PAIRS_PER_CHUNK,
    SENTENCE_SHARE,
    PairedLabels,
    best_per_chunk,
    stand_ins,
    weights,
)
from citewell.retrieval.tokenize import terms_string
from citewell.stores.base import ChunkStore, SearchHit
from citewell.tracing import deferred_span, stage_spans, with_content
from citewell.types import ChunkFilter, ScoredChunk, SearchMode, StoredChunk


@dataclass(frozen=True)
class RetrievalSettings:
    candidate_k: int = 50
    fusion: str = "weighted"
    rrf_k: int = 60
    bm25_weight: float = 0.5
    relevance_threshold: float = 0.0
    top_k_reranker: int = 8
    stemmer: str = "english"


@dataclass(frozen=True)
class Ranking:
    """How candidates are fused, reranked and cut. Read once per search: the application
    hands the retriever the one in force (settings may change while the server runs)."""

    settings: RetrievalSettings
    reranker: Reranker | None = None


@dataclass
class RetrievalTrace:
    """What happened during one search, for debugging and latency benchmarks (ms)."""

    timings: dict[str, float] = field(default_factory=dict)
    dropped_by_threshold: int = 0
    marks: list[tuple[str, int, int]] = field(default_factory=list)  # (stage, start, end) ns

    def mark(self, stage: str, began: float) -> None:
        """A stage that began at ``began`` (perf_counter) ended now: its time in ms, and
        when it ran (for its span in a trace)."""
        elapsed = time.perf_counter() - began
        self.timings[stage] = elapsed * 1000
        end = time.time_ns()
        self.marks.append((stage, end - int(elapsed * 1e9), end))


@dataclass(frozen=True)
class SearchSpace:
    """A chunk store and the embedder that made its vectors: always used as a pair, so a
    query is never embedded by one model and compared with another's vectors. ``sentences``
    holds the sentence pairs of chunks whose KB embeds them (``sentence_vectors``)."""

    store: ChunkStore
    embedder: Embedder
    sentences: ChunkStore | None = None


@dataclass(frozen=True)
class _Dense:
    """One query's dense lists: the chunks nearest it, each chunk's best sentence pair
    (what results report; empty when no KB searched has pairs), and the pairs' list as
    fused, where the chunks of KBs without pairs stand in with their own vector's score."""

    hits: list[SearchHit]
    pairs: list[SearchHit]
    pair_list: list[SearchHit]


class HybridRetriever:
    """Searches one space (``store`` and ``embedder``), or, with ``current``, whichever
    space that returns when a query starts: the application passes the active embedding
    space's handle, so a model switch takes effect from the next query on while a query
    already running finishes in the space it started in."""

    def __init__(
        self,
        store: ChunkStore | None,
        embedder: Embedder | None,
        settings: RetrievalSettings,
        reranker: Reranker | None = None,
        current: Callable[[], SearchSpace] | None = None,
        ranking: Callable[[], Ranking] | None = None,
    ) -> None:
        """``ranking``, when given, supplies the settings and reranker for each search
        (``settings`` and ``reranker`` are then unused)."""
        if current is None:
            if store is None or embedder is None:
                raise ValueError("A retriever needs a store and an embedder, or current.")
            fixed = SearchSpace(store, embedder)

            def current() -> SearchSpace:
                return fixed

        self._current = current
        fixed_ranking = Ranking(settings, reranker)
        self._ranking = ranking or (lambda: fixed_ranking)
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="citewell-search")
        self._paired = PairedLabels()

    @property
    def space(self) -> SearchSpace:
        return self._current()

    @property
    def settings(self) -> RetrievalSettings:
        return self._ranking().settings

    @property
    def reranker(self) -> Reranker | None:
        return self._ranking().reranker

    def search(
        self,
        query: str,
        where: ChunkFilter,
        k: int,
        mode: SearchMode,
        trace: RetrievalTrace | None = None,
        threshold: float | None = None,
        ranking: Ranking | None = None,
    ) -> list[ScoredChunk]:
        """``ranking`` replaces the one in force for this search (a KB's own defaults)."""
        trace = trace or RetrievalTrace()
        with deferred_span("retrieve", mode=mode.value, k=k) as current:
            kept = self._search(query, where, k, mode, trace, threshold, ranking)
            current.set_attribute("results", len(kept))
            if with_content():
                current.set_attribute("query", query)
            stage_spans(trace.marks)
        count_stages(trace.timings)
        return kept

    def _search(
        self,
        query: str,
        where: ChunkFilter,
        k: int,
        mode: SearchMode,
        trace: RetrievalTrace,
        threshold: float | None,
        ranking: Ranking | None,
    ) -> list[ScoredChunk]:
        space, ranking = self.space, ranking or self._ranking()
        settings, reranker = ranking.settings, ranking.reranker
        floor = settings.relevance_threshold if threshold is None else threshold
        started = time.perf_counter()
        widen = mode is SearchMode.HYBRID or reranker is not None
        pool = max(k, settings.candidate_k) if widen else k
        if mode is SearchMode.BM25:
            keyword = self._keyword(space, settings, query, pool, where, trace)
            ranked = _single(keyword, bm25=True)
        elif mode is SearchMode.VECTOR:
            ranked = self._vector_only(space, settings, query, pool, where, trace)
        else:
            ranked = self._hybrid(space, settings, query, pool, where, trace)
        if reranker is None:
            kept = self._best_with_rows(space, ranked[: 2 * k], k, floor, where, trace)
        else:  # the whole pool is read and reranked, then cut
            results = self._with_rows(space, ranked, where, trace)
            began = time.perf_counter()
            results = reranker.rerank(query, results, min(k, settings.top_k_reranker))
            trace.mark("rerank", began)
            kept = [r for r in results if _relevance(r) >= floor]
            trace.dropped_by_threshold = len(results) - len(kept)
        trace.timings["total"] = _ms(started)
        return kept[:k]

    def _best_with_rows(
        self,
        space: SearchSpace,
        ranked: list[ScoredChunk],
        k: int,
        floor: float,
        where: ChunkFilter,
        trace: RetrievalTrace,
    ) -> list[ScoredChunk]:
        """The first k candidates above the threshold that have rows and are not the same
        passage as one before them. Rows are read for as many as are still missing, not
        for the whole margin: at a million chunks each row read from LanceDB costs about
        half a millisecond, and duplicates are rare."""
        above = [r for r in ranked if _relevance(r) >= floor]
        trace.dropped_by_threshold = len(ranked) - len(above)
        out: list[ScoredChunk] = []
        seen: set[str] = set()
        fetched, start = 0.0, 0
        while start < len(above) and len(out) < k:
            batch = above[start : start + k - len(out)]
            start += len(batch)
            out.extend(self._with_rows(space, batch, where, trace, seen))
            fetched += trace.timings["fetch"]
        trace.timings["fetch"] = fetched
        return out

    def _with_rows(
        self,
        space: SearchSpace,
        ranked: list[ScoredChunk],
        where: ChunkFilter,
        trace: RetrievalTrace,
        seen: set[str] | None = None,
    ) -> list[ScoredChunk]:
        """Those with rows inside ``where``, each passage once (``seen``: passages taken
        before). The store filtered every search already; the check here makes sure no
        sentence pair whose file left a KB since can bring that file's chunk back."""
        began = time.perf_counter()
        chunks = {c.id: c for c in space.store.get([r.chunk_id for r in ranked])}
        trace.mark("fetch", began)
        out: list[ScoredChunk] = []
        seen = set() if seen is None else seen
        for result in ranked:
            chunk = chunks.get(result.chunk_id)
            if chunk is None or chunk.text.strip() in seen or not _inside(chunk, where):
                continue  # gone since the search, or the same passage in another file
            seen.add(chunk.text.strip())
            result.chunk = chunk
            out.append(result)
        return out

    def _keyword(
        self,
        space: SearchSpace,
        settings: RetrievalSettings,
        query: str,
        k: int,
        where: ChunkFilter,
        trace: RetrievalTrace,
    ) -> list[SearchHit]:
        began = time.perf_counter()
        terms = terms_string(query, settings.stemmer)
        hits = space.store.keyword_search(terms, k, where)
        trace.mark("keyword", began)  # beside the vector search, on its own thread
        return hits

    def _dense(
        self, space: SearchSpace, query: str, k: int, where: ChunkFilter, trace: RetrievalTrace
    ) -> _Dense:
        began = time.perf_counter()
        vector = space.embedder.embed([query], "query")[0].tolist()
        trace.mark("embed", began)
        pairs = plain = None
        if space.sentences is not None:  # beside the chunks' search, on threads of their own
            paired, without = self._paired.split(space.sentences, where)
            if paired.kb_ids != ():
                pairs = self._pool.submit(
                    self._pair_search, space.sentences, vector, k, paired, trace
                )
            if pairs is not None and without.kb_ids:
                plain = self._pool.submit(space.store.vector_search, vector, k, without)
        began = time.perf_counter()
        hits = space.store.vector_search(vector, k, where)
        trace.mark("vector", began)
        if pairs is None:
            return _Dense(hits, [], [])
        best = pairs.result()
        return _Dense(hits, best, stand_ins(best, plain.result() if plain else []))

    def _pair_search(
        self,
        store: ChunkStore,
        vector: list[float],
        k: int,
        where: ChunkFilter,
        trace: RetrievalTrace,
    ) -> list[SearchHit]:
        began = time.perf_counter()
        hits = store.vector_search(vector, PAIRS_PER_CHUNK * k, where)
        trace.mark("sentences", began)
        return best_per_chunk(hits, k)

    def _vector_only(
        self,
        space: SearchSpace,
        settings: RetrievalSettings,
        query: str,
        k: int,
        where: ChunkFilter,
        trace: RetrievalTrace,
    ) -> list[ScoredChunk]:
        dense = self._dense(space, query, k, where, trace)
        if not dense.pair_list:
            return _single(dense.hits, bm25=False)
        shares = [1 - SENTENCE_SHARE, SENTENCE_SHARE]
        fused = _fuse(settings, [_ranked(dense.hits), _ranked(dense.pair_list)], shares)
        return _combine(top(fused, k), dense.hits, [], dense.pairs)

    def _hybrid(
        self,
        space: SearchSpace,
        settings: RetrievalSettings,
        query: str,
        k: int,
        where: ChunkFilter,
        trace: RetrievalTrace,
    ) -> list[ScoredChunk]:
        keyword = self._pool.submit(self._keyword, space, settings, query, k, where, trace)
        dense = self._dense(space, query, k, where, trace)
        keyword_hits = keyword.result()
        pair_list = [_ranked(dense.pair_list)] if dense.pair_list else []
        lists = [_ranked(dense.hits), *pair_list, _ranked(keyword_hits)]
        fused = _fuse(settings, lists, weights(settings.bm25_weight, bool(pair_list)))
        return _combine(top(fused, k), dense.hits, keyword_hits, dense.pairs)


def _ranked(hits: Sequence[SearchHit]) -> RankedIds:
    return [(h.chunk_id, h.score) for h in hits]


def _fuse(
    settings: RetrievalSettings, lists: Sequence[RankedIds], weights: Sequence[float]
) -> dict[str, float]:
    if settings.fusion == "rrf":
        return reciprocal_rank_fusion(lists, weights, settings.rrf_k)
    return weighted_score_fusion(lists, weights)


def _inside(chunk: StoredChunk, where: ChunkFilter) -> bool:
    if where.file_ids is not None and chunk.file_id not in where.file_ids:
        return False
    return where.kb_ids is None or not set(chunk.kb_ids).isdisjoint(where.kb_ids)


def _ms(began: float) -> float:
    return (time.perf_counter() - began) * 1000


def _single(hits: list[SearchHit], bm25: bool) -> list[ScoredChunk]:
    best = hits[0].score if hits and hits[0].score > 0 else 1.0
    out = []
    for hit in hits:
        # BM25 scores are unbounded; relative to the best hit they read as 0..1.
        result = ScoredChunk(chunk_id=hit.chunk_id, score=hit.score / best if bm25 else hit.score)
        if bm25:
            result.bm25_score, result.bm25_rank = hit.score, hit.rank
        else:
            result.vector_score, result.vector_rank = hit.score, hit.rank
        out.append(result)
    return out


def _combine(
    fused: list[tuple[str, float]],
    vector_hits: Sequence[SearchHit],
    keyword_hits: Sequence[SearchHit],
    pair_hits: Sequence[SearchHit] = (),
) -> list[ScoredChunk]:
    by_vector = {h.chunk_id: h for h in vector_hits}
    by_keyword = {h.chunk_id: h for h in keyword_hits}
    by_pair = {h.chunk_id: h.score for h in pair_hits}
    out = []
    for chunk_id, score in fused:
        v, b = by_vector.get(chunk_id), by_keyword.get(chunk_id)
        out.append(
            ScoredChunk(
                chunk_id=chunk_id,
                score=score,
                vector_score=v.score if v else None,
                vector_rank=v.rank if v else None,
                bm25_score=b.score if b else None,
                bm25_rank=b.rank if b else None,
                sentence_score=by_pair.get(chunk_id),
            )
        )
    return out


def _relevance(result: ScoredChunk) -> float:
    return result.rerank_score if result.rerank_score is not None else result.score
