"""Knowledge bases and the files in them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Response, UploadFile, status
from starlette.concurrency import run_in_threadpool

from citewell.api.deps import CitewellDep
from citewell.api.schemas import (
    BatchPublic,
    IngestPublic,
    JobPublic,
    KnowledgeBaseCreate,
    KnowledgeBasePublic,
    KnowledgeBaseUpdate,
    TextCreate,
)
from citewell.errors import InvalidInput, PayloadTooLarge

router = APIRouter(prefix="/api/v1/knowledge", tags=["knowledge"])


@router.post("", status_code=status.HTTP_201_CREATED)
def create_kb(body: KnowledgeBaseCreate, app: CitewellDep) -> KnowledgeBasePublic:
    return KnowledgeBasePublic.of(app.create_kb(body.name, body.description), [])


@router.get("")
def list_kbs(app: CitewellDep) -> list[KnowledgeBasePublic]:
    return [KnowledgeBasePublic.of(kb) for kb in app.list_kbs()]


@router.get("/{kb_id}")
def get_kb(kb_id: str, app: CitewellDep) -> KnowledgeBasePublic:
    kb = app.catalog.get_kb(kb_id)
    return KnowledgeBasePublic.of(kb, app.files(kb.id))


@router.patch("/{kb_id}")
def update_kb(kb_id: str, body: KnowledgeBaseUpdate, app: CitewellDep) -> KnowledgeBasePublic:
    return KnowledgeBasePublic.of(app.update_kb(kb_id, body.name, body.description))


@router.delete("/{kb_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_kb(kb_id: str, app: CitewellDep) -> None:
    """Delete the KB and every chunk, vector and file that no other KB uses."""
    app.delete_kb(kb_id)


async def read_limited(upload: UploadFile, limit: int) -> bytes:
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"{upload.filename} is larger than {limit} bytes (max_upload_bytes).")
    return data


def upload_name(upload: UploadFile) -> str:
    """The file's own name, without any folder a client put in front of it."""
    return (upload.filename or "upload").replace("\\", "/").rsplit("/", 1)[-1] or "upload"


@router.post(
    "/{kb_id}/files",
    status_code=status.HTTP_201_CREATED,
    responses={202: {"model": JobPublic, "description": "Queued (wait=false)."}},
)
async def upload_file(
    kb_id: str,
    response: Response,
    app: CitewellDep,
    file: Annotated[UploadFile, File()],
    wait: bool = True,
) -> IngestPublic | JobPublic:
    """Upload a file into the KB. The same bytes again are the same file (not re-embedded).
    With wait=false the file is queued: 202 and its job, to follow at /api/v1/jobs/{id}."""
    data = await read_limited(file, app.settings.max_upload_bytes)
    kb = app.catalog.get_kb(kb_id)
    if not wait:
        response.status_code = status.HTTP_202_ACCEPTED
        (job,) = await run_in_threadpool(app.enqueue_uploads, kb.id, [(upload_name(file), data)])
        return JobPublic.of(job)
    record, report = await run_in_threadpool(app.upload, kb.id, upload_name(file), data)
    return IngestPublic.of(record, report)


@router.post("/{kb_id}/batch", status_code=status.HTTP_202_ACCEPTED)
async def upload_batch(
    kb_id: str, app: CitewellDep, files: Annotated[list[UploadFile], File()]
) -> BatchPublic:
    """Queue many files at once (multipart, field 'files' repeated). Follow the batch at
    /api/v1/jobs/batches/{batch_id}; cancel it there too."""
    if not files or len(files) > app.settings.max_batch_files:
        raise InvalidInput(
            f"{len(files)} files in one request; at most {app.settings.max_batch_files} "
            "(max_batch_files). Send them in several batches."
        )
    kb = app.catalog.get_kb(kb_id)
    entries = [
        (upload_name(f), await read_limited(f, app.settings.max_upload_bytes)) for f in files
    ]
    jobs = await run_in_threadpool(app.enqueue_uploads, kb.id, entries)
    return BatchPublic.of(jobs[0].batch_id, jobs)


@router.post("/{kb_id}/text", status_code=status.HTTP_201_CREATED)
def add_text(kb_id: str, body: TextCreate, app: CitewellDep) -> IngestPublic:
    """Ingest raw text as a file of the KB."""
    kb = app.catalog.get_kb(kb_id)
    record, report = app.upload(kb.id, body.name, body.content.encode("utf-8"))
    return IngestPublic.of(record, report)


@router.post("/{kb_id}/files/{file_id}", status_code=status.HTTP_201_CREATED)
def add_existing_file(kb_id: str, file_id: str, app: CitewellDep) -> KnowledgeBasePublic:
    """Add a file that is already stored to this KB too: no parsing, no embedding."""
    if not file_id.isalnum():
        raise InvalidInput("file_id must be a file id from GET /api/v1/files.")
    app.add_file(kb_id, file_id)
    kb = app.catalog.get_kb(kb_id)
    return KnowledgeBasePublic.of(kb, app.files(kb.id))


@router.delete("/{kb_id}/files/{file_id}", status_code=status.HTTP_204_NO_CONTENT)
def remove_file(kb_id: str, file_id: str, app: CitewellDep) -> None:
    """Take the file out of this KB; it is deleted once no KB holds it."""
    app.remove_file(kb_id, file_id)
