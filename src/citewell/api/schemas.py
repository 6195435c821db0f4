"""Request and response bodies (Base/Create/Public naming)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from citewell.api.names import Name
from citewell.services.jobs import Job
from citewell.services.knowledge import FileRecord, KnowledgeBase, RechunkStatus
from citewell.types import IngestReport, SearchMode, Section


class ErrorPublic(BaseModel):
    detail: str
    code: str


MAX_DESCRIPTION = 10_000
MAX_QUERY_CHARS = 2_000  # a web search query: providers take far less
MAX_REFERENCES = 100  # knowledge_collections, file_ids
WebQuery = Annotated[str, Field(max_length=MAX_QUERY_CHARS)]


class KnowledgeSettingsUpdate(BaseModel):
    """A KB's own retrieval defaults; a field left out stays as it is, null clears it (the
    server's setting applies again). A request's own values still win."""

    model_config = ConfigDict(extra="forbid")

    mode: SearchMode | None = Field(default=None, description="hybrid, vector or bm25.")
    top_k: int | None = Field(default=None, ge=1, le=1000)
    candidate_k: int | None = Field(default=None, ge=1, le=1000)
    hybrid_bm25_weight: float | None = Field(default=None, ge=0, le=1)
    relevance_threshold: float | None = Field(default=None, ge=0, le=1)
    rerank: bool | None = Field(
        default=None, description="false: skip the server's reranker for this KB."
    )
    full_context: bool | None = Field(
        default=None, description="Answers get whole documents while they fit."
    )
    chunking: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Its own chunking: server settings such as text_splitter, chunk_size, "
            "chunk_overlap, contextual_chunks (the whole set; the rest are the server's). "
            "A change re-chunks the KB's files in the job queue; searches read the old "
            "chunks until every file is done. null: back to the server's chunking."
        ),
        examples=[{"text_splitter": "token", "chunk_size": 256, "chunk_overlap": 32}],
    )

    def changes(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields_set}


class KnowledgeBaseCreate(BaseModel):
    name: Name
    description: str = Field(default="", max_length=MAX_DESCRIPTION)
    settings: KnowledgeSettingsUpdate | None = None


class KnowledgeBaseUpdate(BaseModel):
    name: Name | None = None
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION)
    settings: KnowledgeSettingsUpdate | None = Field(
        default=None, description="Only the owner or an admin may change these."
    )


class FilePublic(BaseModel):
    id: str
    name: str
    type: str
    mime_type: str
    size: int
    sha256: str
    chunk_count: int
    status: str
    source: str = Field(description="upload, text, url, web-search or youtube.")
    url: str = Field(description="The page or video it was fetched from ('' for uploads).")
    created_at: int
    updated_at: int
    # Open WebUI's names for what its clients read of a KB's files (decision 0025).
    hash: str = Field(description="The same as sha256 (Open WebUI's name).")
    meta: dict[str, Any] = Field(description="name, content_type, size (Open WebUI's shape).")

    @classmethod
    def of(cls, record: FileRecord) -> FilePublic:
        return cls(
            hash=record.sha256,
            meta={"name": record.name, "content_type": record.mime_type, "size": record.size},
            id=record.id,
            name=record.name,
            type=file_type(record),
            size=record.size,
            mime_type=record.mime_type,
            sha256=record.sha256,
            chunk_count=record.chunk_count,
            status=record.status,
            source=record.source,
            url=record.url,
            created_at=int(record.created_at),
            updated_at=int(record.created_at),
        )


class SectionPublic(BaseModel):
    start: int
    end: int
    page: int | None
    headings: list[str]
    boxes: list[tuple[int, int, float, float, float, float]] = Field(
        default_factory=list,
        description="For a PDF page: each line's span in the text, then its left, top, right "
        "and bottom edges as shares of the page's width and height (from the top-left).",
    )
    running: list[str] = Field(
        default_factory=list,
        description="For a PDF page: the running headers, footers and page numbers left "
        "out of its text.",
    )

    @classmethod
    def of(cls, section: Section) -> SectionPublic:
        return cls(
            start=section.start,
            end=section.end,
            page=section.page,
            headings=list(section.headings),
            boxes=list(section.boxes),
            running=list(section.running),
        )


class FileTextPublic(BaseModel):
    id: str
    text: str
    sections: list[SectionPublic] = Field(
        description="Where pages and headings lie in the text (char offsets)."
    )


class RechunkPublic(BaseModel):
    batch_id: str = Field(description="GET /api/v1/jobs/batches/{batch_id} shows its jobs.")
    files: int
    done: int
    failed: int

    @classmethod
    def of(cls, status: RechunkStatus) -> RechunkPublic:
        return cls(
            batch_id=status.batch_id, files=status.files, done=status.done, failed=status.failed
        )


class KnowledgeBasePublic(BaseModel):
    id: str
    name: str
    description: str
    file_count: int
    owner_id: str = Field(description="The user who made it ('' when made without auth).")
    created_at: int
    updated_at: int
    settings: dict[str, Any] = Field(
        default_factory=dict,
        description="Its own retrieval defaults and chunking (only those set).",
    )
    rechunk: RechunkPublic | None = Field(
        default=None, description="The re-chunk after a chunking change, while it runs."
    )
    files: list[FilePublic] | None = None
    # Open WebUI's fields of a knowledge base (decision 0025).
    user_id: str = Field(description="The same as owner_id (Open WebUI's name).")
    meta: dict[str, Any] | None = None
    access_grants: list[dict[str, Any]] = Field(default_factory=list)
    write_access: bool | None = Field(
        default=None, description="Whether you may change it (on GET /knowledge/{id})."
    )

    @classmethod
    def of(
        cls,
        kb: KnowledgeBase,
        files: list[FileRecord] | None = None,
        rechunk: RechunkStatus | None = None,
    ) -> KnowledgeBasePublic:
        return cls(
            rechunk=RechunkPublic.of(rechunk) if rechunk else None,
            user_id=kb.owner_id,
            id=kb.id,
            name=kb.name,
            description=kb.description,
            file_count=kb.file_count,
            owner_id=kb.owner_id,
            settings=kb.settings.set,
            created_at=int(kb.created_at),
            updated_at=int(kb.updated_at),
            files=[FilePublic.of(f) for f in files] if files is not None else None,
        )


class IngestEstimatePublic(BaseModel):
    files: int
    chunks: int
    llm_calls: int = Field(description="Calls contextual_chunks and document_summary would make.")
    prompt_tokens: int = Field(description="Their prompts' size, at about 4 characters a token.")
    contextual_chunks: bool
    document_summary: bool


class IngestPublic(BaseModel):
    file: FilePublic
    chunks_embedded: int
    linked: bool
    unchanged: bool

    @classmethod
    def of(cls, record: FileRecord, report: IngestReport) -> IngestPublic:
        return cls(
            file=FilePublic.of(record),
            chunks_embedded=report.chunks_embedded,
            linked=report.files_linked > 0,
            unchanged=report.files_unchanged > 0,
        )


class ProcessUrlCreate(BaseModel):
    url: str = Field(min_length=1, max_length=4096, description="An http(s) URL.")
    collection_name: str | None = Field(
        default=None,
        max_length=200,
        description="Knowledge base id or name (created when missing); default 'web'.",
    )
    language: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="YouTube only: preferred transcript languages, best first.",
    )


class WebIngestPublic(BaseModel):
    status: bool = True
    collection_name: str
    filename: str = Field(description="The URL, as Open WebUI answers.")
    url: str
    title: str
    file: FilePublic
    chunks_embedded: int
    linked: bool
    unchanged: bool


class WebSearchCreate(BaseModel):
    queries: list[WebQuery] = Field(default_factory=list, max_length=5)
    query: WebQuery | None = Field(default=None, description="One query (older clients).")
    collection_name: str | None = Field(
        default=None, max_length=200, description="Knowledge base for the pages; 'web-search'."
    )
    count: int | None = Field(default=None, ge=1, le=20, description="Pages per query.")

    def all_queries(self) -> list[str]:
        return [q for q in [*self.queries, self.query or ""] if q.strip()]


class WebSearchItemPublic(BaseModel):
    link: str
    title: str
    snippet: str
    query: str
    file_id: str | None = Field(description="The stored page; null when it could not be read.")
    error: str | None = None


class WebSearchPublic(BaseModel):
    status: bool = True
    collection_name: str
    queries: list[str]
    filenames: list[str] = Field(description="URLs of the pages now in the collection.")
    loaded_count: int
    items: list[WebSearchItemPublic]
    files: list[FilePublic]
    errors: list[str] = Field(description="Queries the provider failed on.")


class JobPublic(BaseModel):
    id: str
    batch_id: str
    knowledge_base_id: str
    operation: str
    name: str
    state: str = Field(
        description="queued, parsing, embedding, indexed, failed or cancelled (a retried job "
        "goes back to queued)."
    )
    attempts: int
    max_attempts: int
    error: str | None = Field(description="The last failure's message, null when none.")
    error_code: str | None
    file_id: str | None = Field(description="The indexed file, once the job is done.")
    created_at: float
    updated_at: float
    finished_at: float | None

    @classmethod
    def of(cls, job: Job) -> JobPublic:
        return cls(
            id=job.id,
            batch_id=job.batch_id,
            knowledge_base_id=job.kb_id,
            operation=job.operation,
            name=job.name,
            state=job.state,
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            error=job.last_error or None,
            error_code=job.error_code or None,
            file_id=job.file_id or None,
            created_at=job.created_at,
            updated_at=job.updated_at,
            finished_at=job.finished_at or None,
        )


class BatchPublic(BaseModel):
    batch_id: str
    total: int
    counts: dict[str, int] = Field(description="Jobs per state.")
    done: bool = Field(description="True once every job is indexed, failed or cancelled.")
    jobs: list[JobPublic]

    @classmethod
    def of(cls, batch_id: str, jobs: list[Job]) -> BatchPublic:
        counts: dict[str, int] = {}
        for job in jobs:
            counts[job.state] = counts.get(job.state, 0) + 1
        return cls(
            batch_id=batch_id,
            total=len(jobs),
            counts=counts,
            done=all(job.done for job in jobs),
            jobs=[JobPublic.of(job) for job in jobs],
        )


class SpacePublic(BaseModel):
    id: str = Field(description="The embedding space: one model at one dimension.")
    model_id: str
    dimension: int


class SwitchPublic(SpacePublic):
    batch_id: str = Field(description="The re-embed jobs' batch (GET /api/v1/jobs/batches/…).")
    total: int = Field(description="Files to re-embed.")
    counts: dict[str, int] = Field(description="Re-embed jobs per state.")
    stalled: bool = Field(
        description="Some file failed to re-embed: retry its job and the switch goes on."
    )


class EmbeddingPublic(BaseModel):
    active: SpacePublic = Field(description="The space searches use now.")
    chunks: int = Field(description="Chunks in the active space.")
    switch: SwitchPublic | None = Field(
        description="The model change in progress (null when none): every file is re-embedded "
        "into the new space, which becomes active when all are."
    )


class TextCreate(BaseModel):
    name: str = Field(min_length=1, max_length=500)
    content: str = Field(min_length=1)


class QueryDocRequest(BaseModel):
    collection_name: str = Field(description="A file id.")
    query: str = Field(min_length=1)
    k: int | None = Field(default=None, ge=1, le=1000)
    r: float | None = Field(default=None, ge=0, le=1, description="Relevance threshold.")
    hybrid: bool | None = None
    mode: SearchMode | None = Field(
        default=None, description="hybrid, vector or bm25; wins over hybrid when given."
    )


class QueryCollectionRequest(BaseModel):
    collection_names: list[str] = Field(min_length=1, description="Knowledge base ids or names.")
    query: str = Field(min_length=1)
    k: int | None = Field(default=None, ge=1, le=1000)
    r: float | None = Field(default=None, ge=0, le=1)
    hybrid: bool | None = None
    mode: SearchMode | None = Field(
        default=None, description="hybrid, vector or bm25; wins over hybrid when given."
    )


def file_type(record: FileRecord) -> str:
    """A short type, as the seed's file listing shows it: 'pdf', 'md', 'html', 'txt'."""
    by_mime = {
        "application/pdf": "pdf",
        "text/markdown": "md",
        "text/html": "html",
        "text/plain": "txt",
    }
    if record.mime_type in by_mime:
        return by_mime[record.mime_type]
    return record.name.rsplit(".", 1)[-1].lower() if "." in record.name else "bin"
