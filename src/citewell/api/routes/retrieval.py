"""Retrieval without generation (Open WebUI's /query/doc and /query/collection)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from citewell.api.deps import CitewellDep
from citewell.api.schemas import QueryCollectionRequest, QueryDocRequest
from citewell.types import ChunkFilter, ScoredChunk, SearchMode

router = APIRouter(prefix="/api/v1/retrieval", tags=["retrieval"])


def _mode(app: Any, hybrid: bool | None) -> SearchMode:
    use_hybrid = app.settings.hybrid_search if hybrid is None else hybrid
    return SearchMode.HYBRID if use_hybrid else SearchMode.VECTOR


def _results(results: list[ScoredChunk]) -> dict[str, Any]:
    """Open WebUI's shape (one list per query) plus the same results as objects."""
    metadatas = [
        {
            "file_id": r.chunk.file_id,
            "name": r.chunk.file_name,
            "source": r.chunk.file_name,
            "page": r.chunk.page,
            "start": r.chunk.start,
            "end": r.chunk.end,
            "headings": list(r.chunk.headings),
            "chunk_id": r.chunk.id,
            "knowledge_base_id": r.kb_id,
        }
        for r in results
    ]
    return {
        "documents": [[r.chunk.text for r in results]],
        "metadatas": [metadatas],
        "distances": [[round(r.score, 6) for r in results]],
        "results": [
            {
                "text": r.chunk.text,
                "score": r.score,
                "vector_score": r.vector_score,
                "bm25_score": r.bm25_score,
                **m,
            }
            for r, m in zip(results, metadatas, strict=False)
        ],
    }


@router.post("/query/doc")
def query_doc(body: QueryDocRequest, app: CitewellDep) -> dict[str, Any]:
    record = app.get_file(body.collection_name)
    results = app.search_where(
        body.query,
        ChunkFilter(file_ids=(record.id,)),
        _mode(app, body.hybrid),
        body.k,
        threshold=body.r,
    )
    return _results(results)


@router.post("/query/collection")
def query_collection(body: QueryCollectionRequest, app: CitewellDep) -> dict[str, Any]:
    ids = tuple(app.kb_id(name) for name in body.collection_names)
    results = app.search_where(
        body.query, ChunkFilter(kb_ids=ids), _mode(app, body.hybrid), body.k, threshold=body.r
    )
    return _results(results)
