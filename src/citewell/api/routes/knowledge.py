"""Knowledge bases and the files in them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Response, UploadFile, status
from starlette.concurrency import run_in_threadpool

from citewell.api.deps import AuditDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.schemas import (
    BatchPublic,
    FilePublic,
    IngestEstimatePublic,
    IngestPublic,
    JobPublic,
    KnowledgeBaseCreate,
    KnowledgeBasePublic,
    KnowledgeBaseUpdate,
    TextCreate,
)
from citewell.auth.audit import AuditLog as Audit
from citewell.catalog.kb_settings import NO_SETTINGS
from citewell.engine.scoped import Scoped
from citewell.errors import InvalidInput, PayloadTooLarge
from citewell.sources import SourceItem

router = APIRouter(prefix="/api/v1/knowledge", tags=["knowledge"], route_class=OffLoopJsonRoute)
MAX_NAME = 255


@router.post("", status_code=status.HTTP_201_CREATED)
def create_kb(body: KnowledgeBaseCreate, view: ViewDep, audit: AuditDep) -> KnowledgeBasePublic:
    """A new KB, owned by the caller (only the owner and admins see it until it is shared)."""
    settings = NO_SETTINGS.updated(body.settings.changes()) if body.settings else NO_SETTINGS
    kb = view.create_kb(body.name, body.description, settings)
    audit.record(view.access, "kb.create", "knowledge_base", kb.id, name=kb.name)
    return KnowledgeBasePublic.of(kb, [])


@router.get("")
def list_kbs(view: ViewDep) -> list[KnowledgeBasePublic]:
    """The KBs the caller may read: owned, shared with them or their groups, or public."""
    return [KnowledgeBasePublic.of(kb) for kb in view.kbs()]


@router.get("/{kb_id}")
def get_kb(kb_id: str, view: ViewDep) -> KnowledgeBasePublic:
    kb = view.kb(kb_id)
    return KnowledgeBasePublic.of(kb, view.files(kb.id), view.app.rechunker.status(kb.id))


@router.patch("/{kb_id}")
def update_kb(
    kb_id: str, body: KnowledgeBaseUpdate, view: ViewDep, audit: AuditDep
) -> KnowledgeBasePublic:
    """Rename or describe (write permission); change its own retrieval defaults or chunking
    (owner or admin; a chunking change re-chunks its files in the job queue)."""
    kb = view.writable_kb(kb_id)
    settings = None
    if body.settings is not None:
        kb = view.managed_kb(kb.id)
        settings = kb.settings.updated(body.settings.changes())
    updated = view.app.update_kb(kb.id, body.name, body.description, settings)
    detail = {"settings": sorted(body.settings.changes())} if body.settings else {}
    audit.record(view.access, "kb.update", "knowledge_base", kb.id, name=updated.name, **detail)
    return KnowledgeBasePublic.of(updated, rechunk=view.app.rechunker.status(kb.id))


@router.delete("/{kb_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_kb(kb_id: str, view: ViewDep, audit: AuditDep) -> None:
    """Delete the KB and every chunk, vector and file that no other KB uses (owner or admin)."""
    kb = view.managed_kb(kb_id)
    view.app.delete_kb(kb.id)
    audit.record(view.access, "kb.delete", "knowledge_base", kb.id, name=kb.name)


async def read_limited(upload: UploadFile, limit: int) -> bytes:
    data = await upload.read(limit + 1)
    if len(data) > limit:
        name = upload_name(upload)
        raise PayloadTooLarge(f"{name} is larger than {limit} bytes (max_upload_bytes).")
    return data


def upload_name(upload: UploadFile) -> str:
    return clean_name(upload.filename or "")


def clean_name(raw: str) -> str:
    """A file's own name: no folder a client put in front of it, no control characters,
    at most 255 characters (the extension kept)."""
    name = raw.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(c for c in name if c.isprintable()).strip().lstrip(".")
    if len(name) > MAX_NAME:
        stem, dot, ext = name.rpartition(".")
        name = (stem[: MAX_NAME - len(ext) - 1] + dot + ext) if dot and len(ext) < 16 else name
        name = name[:MAX_NAME]
    return name or "upload"


@router.post(
    "/{kb_id}/files",
    status_code=status.HTTP_201_CREATED,
    responses={202: {"model": JobPublic, "description": "Queued (wait=false)."}},
)
async def upload_file(
    kb_id: str,
    response: Response,
    view: ViewDep,
    audit: AuditDep,
    file: Annotated[UploadFile, File()],
    wait: bool = True,
) -> IngestPublic | JobPublic:
    """Upload a file into the KB. The same bytes again are the same file (not re-embedded).
    With wait=false the file is queued: 202 and its job, to follow at /api/v1/jobs/{id}."""
    app, name = view.app, upload_name(file)
    kb = await run_in_threadpool(view.writable_kb, kb_id)
    data = await read_limited(file, app.settings.max_upload_bytes)
    user = view.access.user_id
    if not wait:
        response.status_code = status.HTTP_202_ACCEPTED
        (job,) = await run_in_threadpool(app.enqueue_uploads, kb.id, [(name, data)], user)
        audit.record(view.access, "file.queue", "knowledge_base", kb.id, name=name, job=job.id)
        return JobPublic.of(job)
    return await run_in_threadpool(_upload, view, audit, kb.id, name, data)


def _upload(view: Scoped, audit: Audit, kb_id: str, name: str, data: bytes) -> IngestPublic:
    """Upload and answer as the caller sees it: that identical bytes were stored already is
    told only when the caller could read them before (else it would reveal another tenant's
    file), and the file carries the caller's own name for it."""
    stored = view.app.stored_file(kb_id, data)
    known = stored is not None and view.readable_file(stored.id) is not None
    record, report = view.app.upload(kb_id, name, data, view.access.user_id)
    audit.record(view.access, "file.upload", "file", record.id, name=name, kb=kb_id)
    seen = view.file(record.id, in_kb=kb_id)
    if report.files_linked and not known:
        return IngestPublic(
            file=FilePublic.of(seen),
            chunks_embedded=seen.chunk_count,
            linked=False,
            unchanged=False,
        )
    return IngestPublic.of(seen, report)


def _item(name: str, data: bytes) -> SourceItem:
    return SourceItem(key=name, name=name, read=lambda: data)


@router.post("/{kb_id}/files/estimate")
async def estimate_files(
    kb_id: str, view: ViewDep, files: Annotated[list[UploadFile], File()]
) -> IngestEstimatePublic:
    """What uploading these files (multipart, field 'files' repeated) would take: chunks,
    and the LLM calls and prompt tokens that contextual chunks and document summaries would
    add. Nothing is stored. Every call is counted, cached or not: what other users' uploads
    cached is not told."""
    app = view.app
    if not files or len(files) > app.settings.max_batch_files:
        raise InvalidInput(f"Send 1 to {app.settings.max_batch_files} files (max_batch_files).")
    kb = await run_in_threadpool(view.writable_kb, kb_id)
    items = [
        _item(upload_name(f), await read_limited(f, app.settings.max_upload_bytes)) for f in files
    ]
    estimate = await run_in_threadpool(app.estimate, items, False, kb.id)
    settings = app.settings
    return IngestEstimatePublic(
        files=estimate.files,
        chunks=estimate.chunks,
        llm_calls=estimate.enrich.llm_calls,
        prompt_tokens=estimate.enrich.prompt_tokens,
        contextual_chunks=settings.contextual_chunks,
        document_summary=settings.document_summary,
    )


@router.post("/{kb_id}/batch", status_code=status.HTTP_202_ACCEPTED)
async def upload_batch(
    kb_id: str, view: ViewDep, audit: AuditDep, files: Annotated[list[UploadFile], File()]
) -> BatchPublic:
    """Queue many files at once (multipart, field 'files' repeated). Follow the batch at
    /api/v1/jobs/batches/{batch_id}; cancel it there too."""
    app = view.app
    if not files or len(files) > app.settings.max_batch_files:
        raise InvalidInput(
            f"{len(files)} files in one request; at most {app.settings.max_batch_files} "
            "(max_batch_files). Send them in several batches."
        )
    kb = await run_in_threadpool(view.writable_kb, kb_id)
    entries = [
        (upload_name(f), await read_limited(f, app.settings.max_upload_bytes)) for f in files
    ]
    jobs = await run_in_threadpool(app.enqueue_uploads, kb.id, entries, view.access.user_id)
    batch = jobs[0].batch_id
    audit.record(view.access, "file.batch", "knowledge_base", kb.id, files=len(jobs), batch=batch)
    return BatchPublic.of(batch, jobs)


@router.post("/{kb_id}/text", status_code=status.HTTP_201_CREATED)
def add_text(kb_id: str, body: TextCreate, view: ViewDep, audit: AuditDep) -> IngestPublic:
    """Ingest raw text as a file of the KB."""
    kb = view.writable_kb(kb_id)
    data = body.content.encode("utf-8")
    if len(body.content) > view.app.settings.max_document_chars:
        raise PayloadTooLarge(
            f"The text has {len(body.content):,} characters; at most "
            f"{view.app.settings.max_document_chars:,} (max_document_chars)."
        )
    return _upload(view, audit, kb.id, clean_name(body.name), data)


@router.post("/{kb_id}/files/{file_id}", status_code=status.HTTP_201_CREATED)
def add_existing_file(
    kb_id: str, file_id: str, view: ViewDep, audit: AuditDep
) -> KnowledgeBasePublic:
    """Add a file that is already stored (and that you may read) to this KB too: no parsing,
    no embedding (a KB with its own chunking splits the stored text its own way)."""
    if not file_id.isalnum():
        raise InvalidInput("file_id must be a file id from GET /api/v1/files.")
    kb = view.writable_kb(kb_id)
    record = view.file(file_id)
    view.app.add_file(kb.id, record.id, record.name, view.access.user_id, seen=record)
    audit.record(view.access, "file.add", "file", record.id, kb=kb.id)
    return KnowledgeBasePublic.of(view.kb(kb.id), view.files(kb.id))


@router.delete("/{kb_id}/files/{file_id}", status_code=status.HTTP_204_NO_CONTENT)
def remove_file(kb_id: str, file_id: str, view: ViewDep, audit: AuditDep) -> None:
    """Take the file out of this KB; it is deleted once no KB holds it."""
    kb = view.writable_kb(kb_id)
    view.app.remove_file(kb.id, file_id)
    audit.record(view.access, "file.remove", "file", file_id, kb=kb.id)
