"""Sources for an answer: the best chunks for the retrieval queries, or whole documents
(full context), packed into the token budget and numbered."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from citewell.answer.context import CitedSource, chunk_source, pack
from citewell.answer.expand import Expansion, expand_sources
from citewell.catalog import FileRecord
from citewell.engine.scoped import Scoped
from citewell.retrieval import RetrievalTrace
from citewell.types import ChunkFilter, ScoredChunk, SearchMode, Section


@dataclass(frozen=True)
class RetrievalChoice:
    """How this answer retrieves: the request's, else its preset's, else the settings'."""

    k: int
    mode: SearchMode | None
    threshold: float | None
    whole: bool  # full context: whole documents while they fit
    bypass: bool  # bypass_embedding_and_retrieval: whole documents, always
    expansion: Expansion = Expansion("off", 0)  # small-to-big


def gather_sources(
    view: Scoped,
    queries: Sequence[str],
    where: list[ChunkFilter],
    budget: int,
    choice: RetrievalChoice,
    count: Callable[[str], int],
    trace: dict[str, Any],
) -> list[CitedSource]:
    if choice.whole or choice.bypass:
        documents = whole_documents(view, where)
        if choice.bypass or sum(count(d.text) for d in documents) <= budget:
            trace["mode"] = "full_context"
            return pack(documents, budget, count)
        trace["mode"] = "retrieval (full context would overflow the budget)"
    results: list[ScoredChunk] = []
    for query in queries:
        for scope in where:
            retrieval = RetrievalTrace()
            found = view.search(query, scope, choice.mode, choice.k, retrieval, choice.threshold)
            results.extend(found)
            trace.setdefault("retrieval_ms", []).append(
                {k: round(v, 2) for k, v in retrieval.timings.items()}
            )
            trace.setdefault("hits", []).append({"query": query, "results": hit_trace(found)})
    ranked = sorted(best_sources(view, results), key=lambda s: -s.score)[: choice.k]
    trace.setdefault("mode", "retrieval")
    if choice.expansion.mode != "off":
        ranked = expand_sources(ranked, partial(kept_text, view), choice.expansion)
        trace["small_to_big"] = choice.expansion.mode
    return pack(ranked, budget, count)


def best_sources(view: Scoped, results: Sequence[ScoredChunk]) -> list[CitedSource]:
    """One source per chunk found (its best score over the queries), with its file's type
    read once for all of them (from the catalog's cache, not a read per hit) and the
    address its link gives."""
    files = {r.id: r for r in view.app.catalog.files_by_id({r.chunk.file_id for r in results})}
    best: dict[str, CitedSource] = {}
    for result in results:
        record = files.get(result.chunk.file_id)
        source = chunk_source(result, record.mime_type if record else "", result.url)
        if result.chunk.id not in best or best[result.chunk.id].score < source.score:
            best[result.chunk.id] = source
    return list(best.values())


def kept_text(view: Scoped, file_id: str) -> tuple[str, Sequence[Section]] | None:
    """A file's extracted text and sections (its chunks were found within the caller's
    access, so the file is readable)."""
    text = view.app.storage.text(file_id)
    return None if text is None else (text, view.app.storage.sections(file_id))


def hit_trace(found: Sequence[ScoredChunk]) -> list[dict[str, Any]]:
    """What each retriever made of each hit: its rank and score there, and the fused one."""
    return [
        {
            "chunk_id": r.chunk.id,
            "file": r.chunk.file_name,
            "score": round(r.score, 6),
            "vector_rank": r.vector_rank,
            "vector_score": None if r.vector_score is None else round(r.vector_score, 6),
            "bm25_rank": r.bm25_rank,
            "bm25_score": None if r.bm25_score is None else round(r.bm25_score, 6),
            "sentence_score": None if r.sentence_score is None else round(r.sentence_score, 6),
        }
        for r in found
    ]


def whole_documents(view: Scoped, where: list[ChunkFilter]) -> list[CitedSource]:
    """Whole files in scope, each under the name the caller sees."""
    records: dict[str, FileRecord] = {}
    for scope in where:
        for kb_id in scope.kb_ids or ():
            records.update((r.id, r) for r in view.files(kb_id) if r.id not in records)
        for file_id in scope.file_ids or ():
            records.setdefault(file_id, view.file(file_id))
    documents = []
    for record in records.values():
        text = view.app.storage.text(record.id)
        if text:
            documents.append(
                CitedSource(
                    0,
                    text,
                    record.id,
                    record.name,
                    record.mime_type,
                    None,
                    0,
                    len(text),
                    1.0,
                    None,
                    None,
                    record.url,
                )
            )
    return documents
