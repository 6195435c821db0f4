"""Retrieval without generation (Open WebUI's /query/doc and /query/collection), and the
remote sources (/process/web, /process/youtube, /process/web_search)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from citewell.api.deps import CitewellDep
from citewell.api.schemas import (
    FilePublic,
    ProcessUrlCreate,
    QueryCollectionRequest,
    QueryDocRequest,
    WebIngestPublic,
    WebSearchCreate,
    WebSearchItemPublic,
    WebSearchPublic,
)
from citewell.errors import InvalidInput
from citewell.fetch import video_id
from citewell.pipeline.web import UrlIngest
from citewell.types import ChunkFilter, ScoredChunk, SearchMode

router = APIRouter(prefix="/api/v1/retrieval", tags=["retrieval"])


def _mode(app: Any, hybrid: bool | None) -> SearchMode:
    use_hybrid = app.settings.hybrid_search if hybrid is None else hybrid
    return SearchMode.HYBRID if use_hybrid else SearchMode.VECTOR


def _results(app: Any, results: list[ScoredChunk]) -> dict[str, Any]:
    """Open WebUI's shape (one list per query) plus the same results as objects."""
    urls = app.file_urls({r.chunk.file_id for r in results})
    metadatas = [
        {
            "file_id": r.chunk.file_id,
            "name": r.chunk.file_name,
            "source": urls.get(r.chunk.file_id) or r.chunk.file_name,
            "url": urls.get(r.chunk.file_id, ""),
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
    return _results(app, results)


@router.post("/query/collection")
def query_collection(body: QueryCollectionRequest, app: CitewellDep) -> dict[str, Any]:
    ids = tuple(app.kb_id(name) for name in body.collection_names)
    results = app.search_where(
        body.query, ChunkFilter(kb_ids=ids), _mode(app, body.hybrid), body.k, threshold=body.r
    )
    return _results(app, results)


def _web_public(app: Any, done: UrlIngest) -> WebIngestPublic:
    return WebIngestPublic(
        collection_name=app.catalog.get_kb(done.kb).name,
        filename=done.url,
        url=done.url,
        title=done.title,
        file=FilePublic.of(done.record),
        chunks_embedded=done.report.chunks_embedded,
        linked=done.report.files_linked > 0,
        unchanged=done.report.files_unchanged > 0,
    )


@router.post("/process/web")
def process_web(body: ProcessUrlCreate, app: CitewellDep) -> WebIngestPublic:
    """Fetch a page (or a PDF or other file; a YouTube URL gives its transcript) into a KB.
    Private, loopback and link-local addresses are refused unless web_fetch_allowlist lets
    them through."""
    return _web_public(app, app.ingest_url(body.url, body.collection_name, body.language))


@router.post("/process/youtube")
def process_youtube(body: ProcessUrlCreate, app: CitewellDep) -> WebIngestPublic:
    """A YouTube video's transcript, in the preferred language, named by the video's title."""
    if video_id(body.url) is None:
        raise InvalidInput(
            f"{body.url!r} is not a YouTube video URL (youtube.com/watch?v=…, youtu.be/…, "
            "/shorts/…, /embed/…, /live/…)."
        )
    return _web_public(app, app.ingest_url(body.url, body.collection_name, body.language))


@router.post("/process/web_search")
def process_web_search(body: WebSearchCreate, app: CitewellDep) -> WebSearchPublic:
    """Search the web, fetch the result pages at once and store them in a KB ('web-search').
    A page that fails is reported in its item; the rest are still stored."""
    outcome = app.web_search(body.all_queries(), body.collection_name, body.count)
    items = [
        WebSearchItemPublic(
            link=hit.result.url,
            title=hit.result.title,
            snippet=hit.result.snippet,
            query=hit.query,
            file_id=hit.file.id if hit.file else None,
            error=hit.error,
        )
        for hit in outcome.hits
    ]
    loaded = [hit.result.url for hit in outcome.hits if hit.file is not None]
    return WebSearchPublic(
        collection_name=outcome.kb,
        queries=outcome.queries,
        filenames=loaded,
        loaded_count=len(loaded),
        items=items,
        files=[FilePublic.of(f) for f in outcome.files],
        errors=outcome.errors,
    )
