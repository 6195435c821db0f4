"""Knowledge bases and the files in them: HTTP in and out of the knowledge service."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Response, UploadFile, status
from starlette.concurrency import run_in_threadpool

from citewell.api.deps import ViewDep
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
from citewell.errors import PayloadTooLarge
from citewell.services.knowledge import KnowledgeService, Uploaded

router = APIRouter(prefix="/api/v1/knowledge", tags=["knowledge"], route_class=OffLoopJsonRoute)
MAX_NAME = 255


def get_knowledge(view: ViewDep) -> KnowledgeService:
    return KnowledgeService(view)


KnowledgeDep = Annotated[KnowledgeService, Depends(get_knowledge)]


@router.post("", status_code=status.HTTP_201_CREATED)
def create_kb(body: KnowledgeBaseCreate, knowledge: KnowledgeDep) -> KnowledgeBasePublic:
    """A new KB, owned by the caller (only the owner and admins see it until it is shared)."""
    changes = body.settings.changes() if body.settings else None
    kb = knowledge.create(body.name, body.description, changes)
    return KnowledgeBasePublic.of(kb, [])


@router.get("")
def list_kbs(knowledge: KnowledgeDep) -> list[KnowledgeBasePublic]:
    """The KBs the caller may read: owned, shared with them or their groups, or public."""
    return [KnowledgeBasePublic.of(kb) for kb in knowledge.kbs()]


@router.get("/{kb_id}")
def get_kb(kb_id: str, knowledge: KnowledgeDep, view: ViewDep) -> KnowledgeBasePublic:
    """The KB and its files (with Open WebUI's fields too: its clients read this route)."""
    kb, files, rechunk = knowledge.get(kb_id)
    found = KnowledgeBasePublic.of(kb, files, rechunk)
    found.write_access = view.access.can_write(kb)
    return found


@router.patch("/{kb_id}")
def update_kb(
    kb_id: str, body: KnowledgeBaseUpdate, knowledge: KnowledgeDep
) -> KnowledgeBasePublic:
    """Rename or describe (write permission); change its own retrieval defaults or chunking
    (owner or admin; a chunking change re-chunks its files in the job queue)."""
    changes = body.settings.changes() if body.settings is not None else None
    updated, rechunk = knowledge.update(kb_id, body.name, body.description, changes)
    return KnowledgeBasePublic.of(updated, rechunk=rechunk)


@router.delete("/{kb_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_kb(kb_id: str, knowledge: KnowledgeDep) -> None:
    """Delete the KB and every chunk, vector and file that no other KB uses (owner or admin)."""
    knowledge.delete(kb_id)


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
    knowledge: KnowledgeDep,
    file: Annotated[UploadFile, File()],
    wait: bool = True,
    folder: str = "",
) -> IngestPublic | JobPublic:
    """Upload a file into the KB. The same bytes again are the same file (not re-embedded).
    With wait=false the file is queued: 202 and its job, to follow at /api/v1/jobs/{id}.
    ``folder`` ("docs/api"): put it in that folder under its name (replacing a file of that
    name there)."""
    name = upload_name(file)
    kb = await run_in_threadpool(knowledge.writable, kb_id)
    data = await read_limited(file, knowledge.max_upload_bytes)
    if not wait:
        response.status_code = status.HTTP_202_ACCEPTED
        job = await run_in_threadpool(knowledge.queue, kb.id, name, data, folder)
        return JobPublic.of(job)
    uploaded = await run_in_threadpool(knowledge.upload, kb.id, name, data, folder)
    return _ingested(uploaded)


def _ingested(uploaded: Uploaded) -> IngestPublic:
    """Identical bytes stored before are told only to a caller who could read them."""
    seen, report = uploaded.record, uploaded.report
    if report.files_linked and not uploaded.known:
        return IngestPublic(
            file=FilePublic.of(seen),
            chunks_embedded=seen.chunk_count,
            linked=False,
            unchanged=False,
        )
    return IngestPublic.of(seen, report)


@router.post("/{kb_id}/files/estimate")
async def estimate_files(
    kb_id: str, knowledge: KnowledgeDep, files: Annotated[list[UploadFile], File()]
) -> IngestEstimatePublic:
    """What uploading these files (multipart, field 'files' repeated) would take: chunks,
    and the LLM calls and prompt tokens that contextual chunks and document summaries would
    add. Nothing is stored. Every call is counted, cached or not: what other users' uploads
    cached is not told."""
    knowledge.check_estimate(len(files))
    kb = await run_in_threadpool(knowledge.writable, kb_id)
    limit = knowledge.max_upload_bytes
    entries = [(upload_name(f), await read_limited(f, limit)) for f in files]
    estimate = await run_in_threadpool(knowledge.estimate, kb.id, entries)
    enrichment = knowledge.enrichment
    return IngestEstimatePublic(
        files=estimate.files,
        chunks=estimate.chunks,
        llm_calls=estimate.enrich.llm_calls,
        prompt_tokens=estimate.enrich.prompt_tokens,
        contextual_chunks=enrichment.contextual_chunks,
        document_summary=enrichment.document_summary,
    )


@router.post("/{kb_id}/batch", status_code=status.HTTP_202_ACCEPTED)
async def upload_batch(
    kb_id: str,
    knowledge: KnowledgeDep,
    files: Annotated[list[UploadFile], File()],
    folder: str = "",
) -> BatchPublic:
    """Queue many files at once (multipart, field 'files' repeated; ``folder``: into that
    folder, each under its name). Follow the batch at /api/v1/jobs/batches/{batch_id};
    cancel it there too."""
    knowledge.check_batch(len(files))
    kb = await run_in_threadpool(knowledge.writable, kb_id)
    limit = knowledge.max_upload_bytes
    entries = [(upload_name(f), await read_limited(f, limit)) for f in files]
    jobs = await run_in_threadpool(knowledge.enqueue, kb.id, entries, folder)
    return BatchPublic.of(jobs[0].batch_id, jobs)


@router.post("/{kb_id}/text", status_code=status.HTTP_201_CREATED)
def add_text(kb_id: str, body: TextCreate, knowledge: KnowledgeDep) -> IngestPublic:
    """Ingest raw text as a file of the KB."""
    return _ingested(knowledge.add_text(kb_id, clean_name(body.name), body.content))


@router.post("/{kb_id}/files/{file_id}", status_code=status.HTTP_201_CREATED)
def add_existing_file(kb_id: str, file_id: str, knowledge: KnowledgeDep) -> KnowledgeBasePublic:
    """Add a file that is already stored (and that you may read) to this KB too: no parsing,
    no embedding (a KB with its own chunking splits the stored text its own way)."""
    kb, _, files = knowledge.add_existing(kb_id, file_id)
    return KnowledgeBasePublic.of(kb, files)


@router.delete("/{kb_id}/files/{file_id}", status_code=status.HTTP_204_NO_CONTENT)
def remove_file(kb_id: str, file_id: str, knowledge: KnowledgeDep) -> None:
    """Take the file out of this KB; it is deleted once no KB holds it."""
    knowledge.remove_file(kb_id, file_id)
