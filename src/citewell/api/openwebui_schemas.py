"""Request and response shapes of Open WebUI 0.12.4's knowledge and file API, as Citewell
answers them (decision 0025). Field names and types are Open WebUI's; what Citewell adds
(``path``, ``file_id``, ``chunk_count``) rides along as extra fields its clients ignore."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from citewell.services.folders import EntryView, Folder
from citewell.services.knowledge import KnowledgeBase
from citewell.services.knowledge_sync import Upload

MAX_MANIFEST = 100_000


class KnowledgeForm(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    access_grants: list[dict[str, Any]] | None = None


class FileIdForm(BaseModel):
    file_id: str = Field(min_length=1, max_length=64)
    directory_id: str | None = None


class DirectoryCreateForm(BaseModel):
    name: str = Field(min_length=1, max_length=255)
    parent_id: str | None = None


class DirectoryUpdateForm(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=255)
    parent_id: str | None = "__unset__"


class ManifestEntryForm(BaseModel):
    filename: str = Field(min_length=1, max_length=255)
    path: str = Field(default="", max_length=744)
    checksum: str = Field(min_length=64, max_length=64, pattern="^[0-9a-fA-F]{64}$")
    size: int = Field(ge=0)


class SyncDiffForm(BaseModel):
    manifest: list[ManifestEntryForm] = Field(max_length=MAX_MANIFEST)


class SyncCleanupForm(BaseModel):
    file_ids: list[str] = Field(max_length=MAX_MANIFEST)
    dir_ids: list[str] = Field(default_factory=list, max_length=MAX_MANIFEST)


class SyncDiffResponse(BaseModel):
    added: list[dict[str, str]]
    modified: list[dict[str, str]]
    deleted: list[dict[str, str]]
    mkdir: list[str]
    rmdir: list[str]
    unmodified_count: int
    directory_map: dict[str, str]


class KnowledgeResponse(BaseModel):
    id: str
    user_id: str
    name: str
    description: str
    meta: dict[str, Any] | None = None
    access_grants: list[dict[str, Any]] = Field(default_factory=list)
    created_at: int
    updated_at: int
    files: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, kb: KnowledgeBase, files: list[dict[str, Any]] | None = None) -> Any:
        return cls(
            id=kb.id,
            user_id=kb.owner_id,
            name=kb.name,
            description=kb.description,
            created_at=int(kb.created_at),
            updated_at=int(kb.updated_at),
            files=files,
        )


class KnowledgeFilesResponse(KnowledgeResponse):
    files: list[dict[str, Any]] | None = None
    write_access: bool | None = False
    warnings: dict[str, Any] | None = None


class KnowledgeAccessResponse(KnowledgeResponse):
    user: dict[str, Any] | None = None
    file_count: int | None = None
    write_access: bool | None = False


class KnowledgeAccessListResponse(BaseModel):
    items: list[KnowledgeAccessResponse]
    total: int


class DirectoryModel(BaseModel):
    id: str
    knowledge_id: str
    parent_id: str | None = None
    name: str
    user_id: str
    created_at: int
    updated_at: int
    path: str = Field(description="Citewell: the folder's full path.")

    @classmethod
    def of(cls, folder: Folder, parent_id: str | None) -> DirectoryModel:
        return cls(
            id=folder.id,
            knowledge_id=folder.kb_id,
            parent_id=parent_id,
            name=folder.name,
            user_id=folder.created_by,
            created_at=int(folder.created_at),
            updated_at=int(folder.updated_at),
            path=folder.path,
        )


class KnowledgeFileListResponse(BaseModel):
    items: list[dict[str, Any]]
    directories: list[DirectoryModel] = Field(default_factory=list)
    breadcrumbs: list[DirectoryModel] = Field(default_factory=list)
    total: int


def file_meta(view: EntryView) -> dict[str, Any]:
    record = view.file
    return {
        "name": view.entry.filename,
        "content_type": record.mime_type,
        "size": record.size,
        "file_hash": record.sha256,
        "collection_name": view.entry.kb_id,
        "data": {},  # what the uploader sent along: not kept past the upload
    }


def file_metadata(view: EntryView) -> dict[str, Any]:
    """Open WebUI's FileMetadataResponse of one entry."""
    added = int(view.entry.added_at)
    return {
        "id": view.entry.entry_id,
        "hash": view.file.sha256,
        "meta": file_meta(view),
        "created_at": added,
        "updated_at": added,
    }


def file_listing(view: EntryView, directory_path: str) -> dict[str, Any]:
    """Open WebUI's FileUserResponse of one entry, with Citewell's path and file id."""
    return {
        **file_metadata(view),
        "user_id": view.entry.added_by,
        "filename": view.entry.filename,
        "data": {"status": _status(view.file.status)},
        "directory_id": view.folder_id,
        "directory_path": directory_path,
        "has_original": True,
        "user": None,
        "path": view.display_path,
        "file_id": view.file.id,
        "chunk_count": view.file.chunk_count,
        "status": view.file.status,  # Citewell's: indexed, failed, …
    }


def upload_response(upload: Upload, view: EntryView | None) -> dict[str, Any]:
    """Open WebUI's answer to POST /api/v1/files/ (its FileModel plus "status")."""
    meta = {
        "name": upload.name,
        "content_type": upload.content_type or None,
        "size": upload.size,
        "file_hash": upload.sha256,
        "data": upload.meta,
    }
    status = _status(view.file.status) if view is not None else "completed"
    return {
        "status": True,
        "id": upload.id,
        "user_id": upload.user_id,
        "hash": upload.sha256,
        "filename": upload.name,
        "path": view.display_path if view is not None else None,
        "data": {"status": status},
        "meta": meta,
        "created_at": int(upload.created_at),
        "updated_at": int(upload.created_at),
    }


def _status(status: str) -> str:
    """Open WebUI's processing states: pending, completed, failed."""
    return {"indexed": "completed", "failed": "failed"}.get(status, "pending")
