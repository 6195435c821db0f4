"""Files across the knowledge bases the caller may read."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Response, status

from citewell.api.deps import ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.schemas import FilePublic, FileTextPublic, SectionPublic
from citewell.services.knowledge import KnowledgeService

router = APIRouter(prefix="/api/v1/files", tags=["files"], route_class=OffLoopJsonRoute)

# Types a browser shows without running anything; everything else (HTML, SVG, XML, scripts)
# is sent as a download of bytes, so a stored original can never run in Citewell's origin.
INLINE_TYPES = frozenset({"application/pdf", "text/plain", "text/csv", "text/markdown"})
INLINE_PREFIXES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def safe_content_type(mime_type: str) -> str:
    """Text types get '; charset=utf-8' from Starlette's Response."""
    base = mime_type.split(";", 1)[0].strip().lower()
    if base in INLINE_TYPES or base.startswith(INLINE_PREFIXES):
        return base
    return "application/octet-stream"


@router.get("")
def list_files(view: ViewDep) -> list[FilePublic]:
    """Files in the KBs you may read."""
    return [FilePublic.of(f) for f in view.files()]


@router.get("/{file_id}")
def get_file(file_id: str, view: ViewDep) -> FilePublic:
    """A file and its status (indexed once its chunks are searchable)."""
    return FilePublic.of(view.file(file_id))


@router.get("/{file_id}/text")
def get_file_text(file_id: str, view: ViewDep) -> FileTextPublic:
    """The text extracted from the file: citations' char offsets point into it. ``sections``
    say where its pages and headings lie (empty for files ingested before 0.2)."""
    text, sections = view.file_text_and_sections(file_id)
    return FileTextPublic(id=file_id, text=text, sections=[SectionPublic.of(s) for s in sections])


@router.get(
    "/{file_id}/content",
    response_class=Response,
    responses={
        200: {
            "description": "The original bytes.",
            "content": {
                kind: {"schema": {"type": "string", "format": "binary"}}
                for kind in ("application/octet-stream", *sorted(INLINE_TYPES), *INLINE_PREFIXES)
            },
        }
    },
)
def get_file_content(file_id: str, view: ViewDep) -> Response:
    """The original bytes, as a download (active content types are sent as
    application/octet-stream, never rendered)."""
    record, data = view.file_original(file_id)
    return Response(
        data,
        media_type=safe_content_type(record.mime_type),
        headers={
            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(record.name)}",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
        },
    )


@router.get(
    "/{file_id}/pages/{page}/image",
    response_class=Response,
    responses={200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}},
)
def get_page_image(
    file_id: str,
    page: Annotated[int, Path(ge=1, le=100_000)],
    view: ViewDep,
    width: Annotated[int, Query(ge=200, le=2400)] = 1200,
) -> Response:
    """A page of a PDF as a PNG ``width`` pixels wide (rendered in an extraction worker):
    the viewer draws a citation's boxes (``sections[].boxes`` of ``/text``) over it."""
    image = view.file_page_image(file_id, page, width)
    return Response(
        image, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"}
    )


@router.delete("/{file_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_file(file_id: str, view: ViewDep) -> None:
    """Delete the file from every KB you may read (you must be able to change each of them).
    Its bytes, chunks and vectors go once no KB at all holds it."""
    KnowledgeService(view).delete_file(file_id)
