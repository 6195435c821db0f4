"""Open WebUI 0.12.4's file upload (decision 0025): ``POST /api/v1/files/`` (multipart
``file`` and a ``metadata`` JSON field). With ``metadata.knowledge_id`` (and
``directory_id``) the file goes straight into that KB folder, under its name; without, it
waits for ``/api/v1/knowledge/{id}/file/add``. ``GET /api/v1/files/{id}/process/status``
answers how processing went (Citewell ingests before it answers the upload)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, HTTPException, UploadFile
from starlette.concurrency import run_in_threadpool

from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.openwebui_schemas import upload_response
from citewell.api.routes.knowledge import read_limited, upload_name
from citewell.api.routes.openwebui_knowledge import SyncDep, open_webui_errors

router = APIRouter(prefix="/api/v1/files", tags=["open-webui"], route_class=OffLoopJsonRoute)


def _metadata(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise HTTPException(400, "Invalid metadata format: send a JSON object.") from error
    if not isinstance(value, dict):
        raise HTTPException(400, "Invalid metadata format: send a JSON object.")
    return value


@router.post("/")
async def upload_file(
    sync: SyncDep,
    file: Annotated[UploadFile, File()],
    metadata: Annotated[str | None, Form()] = None,
) -> dict[str, Any]:
    """Upload a file; with metadata.knowledge_id it is ingested into that KB (folder:
    metadata.directory_id) before the answer, which says ``data.status`` completed."""
    meta = _metadata(metadata)
    name = upload_name(file)
    data = await read_limited(file, sync.max_upload_bytes)
    content_type = file.content_type or ""
    with open_webui_errors():
        done = await run_in_threadpool(sync.upload, name, content_type, data, meta)
    return upload_response(done.upload, done.entry)


@router.get("/{upload_id}/process/status")
def process_status(upload_id: str, sync: SyncDep) -> dict[str, str]:
    """completed once the file is searchable (Citewell answers an upload after that)."""
    upload = sync.get_upload(upload_id)
    if upload is None:
        raise HTTPException(404, "No such upload of yours; POST /api/v1/files/ makes one.")
    return {"status": "completed"}
