"""Retrieval without generation (Open WebUI's /query/doc and /query/collection), and the
remote sources (/process/web, /process/youtube, /process/web_search)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from citewell.api.deps import AuditDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
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
from citewell.engine.scoped import Scoped
from citewell.errors import InvalidInput
from citewell.fetch import video_id
from citewell.services.search import SearchService, requested_mode
from citewell.services.web import Fetched, WebService
from citewell.types import ScoredChunk

router = APIRouter(prefix="/api/v1/retrieval", tags=["retrieval"], route_class=OffLoopJsonRoute)


def _results(results: list[ScoredChunk]) -> JSONResponse:
    """Open WebUI's shape (one list per query) plus the same results as objects, rendered
    here in the route's worker thread: FastAPI would check a returned dict in another trip
    to the thread pool, then encode it on the event loop."""
    metadatas = [
        {
            "file_id": r.chunk.file_id,
            "name": r.chunk.file_name,
            "source": r.url or r.chunk.file_name,
            "url": r.url,
            "page": r.chunk.page,
            "start": r.chunk.start,
            "end": r.chunk.end,
            "headings": list(r.chunk.headings),
            "chunk_id": r.chunk.id,
            "knowledge_base_id": r.kb_id,
        }
        for r in results
    ]
    content = {
        "documents": [[r.chunk.text for r in results]],
        "metadatas": [metadatas],
        "distances": [[round(r.score, 6) for r in results]],
        "results": [
            {
                "text": r.chunk.text,
                "score": r.score,
                "vector_score": r.vector_score,
                "bm25_score": r.bm25_score,
                "rerank_score": r.rerank_score,
                "sentence_score": r.sentence_score,
                **m,
            }
            for r, m in zip(results, metadatas, strict=False)
        ],
    }
    return JSONResponse(content)


@router.post("/query/doc", response_model=dict[str, Any])
def query_doc(body: QueryDocRequest, view: ViewDep) -> JSONResponse:
    """Search one file (collection_name is its id) within the KBs you may read."""
    mode = requested_mode(body.hybrid, body.mode)
    found = SearchService(view).in_file(body.collection_name, body.query, mode, body.k, body.r)
    return _results(found)


@router.post("/query/collection", response_model=dict[str, Any])
def query_collection(body: QueryCollectionRequest, view: ViewDep) -> JSONResponse:
    """Search knowledge bases (ids or names) you may read."""
    mode = requested_mode(body.hybrid, body.mode)
    search = SearchService(view)
    return _results(search.in_collections(body.collection_names, body.query, mode, body.k, body.r))


def _web_public(fetched: Fetched) -> WebIngestPublic:
    done = fetched.done
    return WebIngestPublic(
        collection_name=fetched.kb.name,
        filename=done.url,
        url=done.url,
        title=done.title,
        file=FilePublic.of(fetched.file),
        chunks_embedded=done.report.chunks_embedded,
        linked=done.report.files_linked > 0,
        unchanged=done.report.files_unchanged > 0,
    )


@router.post("/process/web")
def process_web(body: ProcessUrlCreate, view: ViewDep, audit: AuditDep) -> WebIngestPublic:
    """Fetch a page (or a PDF or other file; a YouTube URL gives its transcript) into a KB
    (default: your own 'web-NAME'). Private, loopback and link-local addresses are refused
    unless web_fetch_allowlist lets them through."""
    return _fetch_url(view, audit, body)


@router.post("/process/youtube")
def process_youtube(body: ProcessUrlCreate, view: ViewDep, audit: AuditDep) -> WebIngestPublic:
    """A YouTube video's transcript, in the preferred language, named by the video's title."""
    if video_id(body.url) is None:
        raise InvalidInput(
            f"{body.url!r} is not a YouTube video URL (youtube.com/watch?v=…, youtu.be/…, "
            "/shorts/…, /embed/…, /live/…)."
        )
    return _fetch_url(view, audit, body)


def _fetch_url(view: Scoped, audit: AuditDep, body: ProcessUrlCreate) -> WebIngestPublic:
    fetched = WebService(view).fetch(body.url, body.collection_name, body.language)
    done = fetched.done
    audit.record(view.access, "file.fetch", "file", done.record.id, url=done.url, kb=fetched.kb.id)
    return _web_public(fetched)


@router.post("/process/web_search")
def process_web_search(body: WebSearchCreate, view: ViewDep, audit: AuditDep) -> WebSearchPublic:
    """Search the web, fetch the result pages at once and store them in a KB (default: your
    own 'web-search-NAME'). A page that fails is reported in its item; the rest are stored."""
    kb, outcome = WebService(view).search(body.all_queries(), body.collection_name, body.count)
    audit.record(view.access, "web.search", "knowledge_base", kb.id, pages=len(outcome.files))
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
        files=[FilePublic.of(view.file(f.id)) for f in outcome.files],
        errors=outcome.errors,
    )
