"""Files across knowledge bases."""

from __future__ import annotations

from fastapi import APIRouter, status

from citewell.api.deps import CitewellDep
from citewell.api.schemas import FilePublic

router = APIRouter(prefix="/api/v1/files", tags=["files"])


@router.get("")
def list_files(app: CitewellDep) -> list[FilePublic]:
    return [FilePublic.of(f) for f in app.files()]


@router.get("/{file_id}")
def get_file(file_id: str, app: CitewellDep) -> FilePublic:
    """A file and its status (indexed once its chunks are searchable)."""
    return FilePublic.of(app.get_file(file_id))


@router.get("/{file_id}/text")
def get_file_text(file_id: str, app: CitewellDep) -> dict[str, str]:
    """The text extracted from the file: citations' char offsets point into it."""
    return {"id": file_id, "text": app.file_text(file_id)}


@router.delete("/{file_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_file(file_id: str, app: CitewellDep) -> None:
    """Delete the file everywhere: every chunk, vector and index entry goes with it."""
    app.delete_file(file_id)
