"""Open WebUI 0.12.4's knowledge API (decision 0025): the routes its sync tools drive, with
its request and response shapes and status codes, over Citewell's knowledge, folder and sync
services (access is Citewell's: grants, keys and KB-limited keys). The folder routes
(``/dirs``, ``/file/move``) and the paged file list are Citewell's own folder API too.
``GET /api/v1/knowledge/{id}`` is the native route, whose answer carries Open WebUI's
fields as well."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from citewell.api.deps import ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.openwebui_schemas import (
    DirectoryCreateForm,
    DirectoryModel,
    DirectoryUpdateForm,
    FileIdForm,
    KnowledgeAccessListResponse,
    KnowledgeAccessResponse,
    KnowledgeFileListResponse,
    KnowledgeFilesResponse,
    KnowledgeForm,
    KnowledgeResponse,
    SyncCleanupForm,
    SyncDiffForm,
    SyncDiffResponse,
    file_listing,
    file_metadata,
)
from citewell.errors import CitewellError, Forbidden, NotFoundError
from citewell.services.folders import Folder, FolderService, PageRequest
from citewell.services.knowledge import KnowledgeBase, KnowledgeService
from citewell.services.knowledge_sync import KnowledgeSync, ManifestEntry

router = APIRouter(prefix="/api/v1/knowledge", tags=["open-webui"], route_class=OffLoopJsonRoute)
PAGE_ITEMS = 30


def get_sync(view: ViewDep) -> KnowledgeSync:
    return KnowledgeSync(view)


SyncDep = Annotated[KnowledgeSync, Depends(get_sync)]


@contextmanager
def open_webui_errors(missing: int = 400, forbidden: int = 400) -> Iterator[None]:
    """Open WebUI's status codes, which differ by route: a KB the caller may not read is
    missing (the same answer as one that does not exist), one they may not change is
    ``forbidden``."""
    try:
        yield
    except NotFoundError as error:
        raise HTTPException(missing, error.message) from error
    except Forbidden as error:
        raise HTTPException(forbidden, error.message) from error


def _kb_files(sync: KnowledgeSync, kb: KnowledgeBase, **extra: Any) -> KnowledgeFilesResponse:
    views = sync.files_of(kb.id)
    found = sync.view.kb(kb.id)  # the updated time and count after the change
    response = KnowledgeFilesResponse.of(found, [file_metadata(v) for v in views])
    response.write_access = sync.view.access.can_write(found)
    for name, value in extra.items():
        setattr(response, name, value)
    return response  # type: ignore[no-any-return]


@router.get("/", response_model=KnowledgeAccessListResponse)
def list_knowledge(view: ViewDep, page: int = 1) -> KnowledgeAccessListResponse:
    """The KBs the caller may read, 30 a page (Open WebUI's list; ``GET /api/v1/knowledge``
    without the slash is Citewell's, all at once)."""
    kbs = sorted(view.kbs(), key=lambda kb: -kb.updated_at)
    start = (max(page, 1) - 1) * PAGE_ITEMS
    items = []
    for kb in kbs[start : start + PAGE_ITEMS]:
        item = KnowledgeAccessResponse.of(kb)
        item.file_count, item.write_access = kb.file_count, view.access.can_write(kb)
        items.append(item)
    return KnowledgeAccessListResponse(items=items, total=len(kbs))


@router.post("/create", response_model=KnowledgeResponse)
def create_knowledge(body: KnowledgeForm, view: ViewDep) -> KnowledgeResponse:
    with open_webui_errors(forbidden=401):
        kb = KnowledgeService(view).create(body.name, body.description)
    return KnowledgeResponse.of(kb)  # type: ignore[no-any-return]


@router.get("/{kb_id}/files", response_model=KnowledgeFileListResponse)
def list_knowledge_files(  # noqa: PLR0913
    kb_id: str,
    view: ViewDep,
    query: str | None = None,
    order_by: str | None = None,
    direction: str | None = None,
    directory_id: Annotated[
        str | None, Query(description="A folder's id; '' the top level.")
    ] = None,
    page: int = 1,
    limit: Annotated[int | None, Query(ge=1, le=1000)] = None,
) -> KnowledgeFileListResponse:
    """A KB's files, 30 a page (``limit``: another size), newest first; in one folder
    (``directory_id``; "" the top level) with its sub-folders and the path to it."""
    folders = FolderService(view)
    request = PageRequest(
        folder_id=directory_id,
        query=query or "",
        order_by=order_by or "updated_at",
        descending=direction != "asc",
        page=page,
        size=limit or PAGE_ITEMS,
    )
    with open_webui_errors():
        listed = folders.page(kb_id, request)
    ids = listed.folder_ids
    return KnowledgeFileListResponse(
        items=[file_listing(v, v.entry.folder) for v in listed.items],
        directories=[_directory(f, ids) for f in listed.folders],
        breadcrumbs=[_directory(f, ids) for f in listed.breadcrumbs],
        total=listed.total,
    )


def _directory(folder: Folder, ids_by_path: dict[str, str]) -> DirectoryModel:
    parent = ids_by_path.get(folder.parent_path) if folder.parent_path else None
    return DirectoryModel.of(folder, parent)


@router.post("/{kb_id}/file/add", response_model=KnowledgeFilesResponse)
def add_file(kb_id: str, body: FileIdForm, sync: SyncDep) -> KnowledgeFilesResponse:
    """Add an uploaded file (or a file of a KB you may read) to this KB, in a folder."""
    with open_webui_errors():
        sync.add(kb_id, body.file_id, body.directory_id)
        kb = sync.view.kb(kb_id)
    return _kb_files(sync, kb)


@router.post("/{kb_id}/file/update", response_model=KnowledgeFilesResponse)
def update_file(kb_id: str, body: FileIdForm, sync: SyncDep) -> KnowledgeFilesResponse:
    """Open WebUI re-embeds a file whose stored text changed; Citewell's stored text never
    changes in place (new bytes are a new file), so this checks and answers."""
    with open_webui_errors():
        kb = sync.view.writable_kb(kb_id)
        sync.folders.entries_of(kb.id, body.file_id)
    return _kb_files(sync, kb)


@router.post("/{kb_id}/file/remove", response_model=KnowledgeFilesResponse)
def remove_file(kb_id: str, body: FileIdForm, sync: SyncDep) -> KnowledgeFilesResponse:
    """Take the file out of this KB (stored bytes go once no KB holds them)."""
    with open_webui_errors():
        kb = sync.remove(kb_id, body.file_id)
    return _kb_files(sync, kb)


@router.post("/{kb_id}/files/batch/add", response_model=KnowledgeFilesResponse)
def add_files(kb_id: str, body: list[FileIdForm], sync: SyncDep) -> KnowledgeFilesResponse:
    """Add several files at once; those that fail are named in ``warnings``."""
    with open_webui_errors():
        kb = sync.view.writable_kb(kb_id)
        _, errors = sync.add_many(kb.id, [(f.file_id, f.directory_id) for f in body])
    warnings = {"message": "Some files failed to process", "errors": errors} if errors else None
    return _kb_files(sync, kb, warnings=warnings)


@router.post("/{kb_id}/reset", response_model=KnowledgeResponse)
def reset_knowledge(
    kb_id: str,
    sync: SyncDep,
    include_directories: bool = True,
) -> KnowledgeResponse:
    """Every file out of the KB (and its folders, unless include_directories=false)."""
    with open_webui_errors():
        sync.reset(kb_id, include_directories)
        kb = sync.view.kb(kb_id)
    return KnowledgeResponse.of(kb)  # type: ignore[no-any-return]


@router.delete("/{kb_id}/delete", response_model=bool)
def delete_knowledge(kb_id: str, view: ViewDep) -> bool:
    """Delete the KB (owner or admin), as DELETE /api/v1/knowledge/{id} does."""
    with open_webui_errors():
        KnowledgeService(view).delete(kb_id)
    return True


@router.post("/{kb_id}/sync/diff", response_model=SyncDiffResponse)
def sync_diff(kb_id: str, body: SyncDiffForm, sync: SyncDep) -> SyncDiffResponse:
    """What a sync of these files must change: added, modified (with the stale file's id),
    deleted, folders to make and to remove, how many are unchanged, and the folders' ids."""
    manifest = [ManifestEntry(e.path, e.filename, e.checksum) for e in body.manifest]
    with open_webui_errors(missing=404, forbidden=403):
        diff = sync.diff(kb_id, manifest)
    return SyncDiffResponse(
        added=[{"filename": n, "path": p} for p, n in diff.added],
        modified=[{"filename": n, "path": p, "stale_file_id": i} for p, n, i in diff.modified],
        deleted=[{"file_id": i, "filename": n} for i, n in diff.deleted],
        mkdir=diff.mkdir,
        rmdir=diff.rmdir,
        unmodified_count=diff.unmodified,
        directory_map=diff.folder_ids,
    )


@router.post("/{kb_id}/sync/cleanup")
def sync_cleanup(kb_id: str, body: SyncCleanupForm, sync: SyncDep) -> dict[str, bool]:
    """Remove the files and folders a sync found stale (ids not in the KB are skipped)."""
    with open_webui_errors(missing=404, forbidden=403):
        sync.cleanup(kb_id, body.file_ids, body.dir_ids)
    return {"status": True}


@router.get("/{kb_id}/folders")
def list_folders(kb_id: str, view: ViewDep) -> list[DirectoryModel]:
    """Every folder of the KB, parents before children (Citewell's folder tree; the paged
    file list shows one level at a time)."""
    _, folders = FolderService(view).tree(kb_id)
    ids = {f.path: f.id for f in folders}
    return [_directory(f, ids) for f in folders]


@router.post("/{kb_id}/dirs/create", response_model=DirectoryModel)
def create_directory(kb_id: str, body: DirectoryCreateForm, view: ViewDep) -> DirectoryModel:
    """A folder in the KB (in ``parent_id``; the top level without)."""
    folders = FolderService(view)
    with open_webui_errors(missing=404, forbidden=403):
        folder, made = folders.make(kb_id, body.name, body.parent_id)
    if not made:
        raise HTTPException(
            400,
            "Failed to create directory. A directory with this name may already exist at "
            "this level.",
        )
    return _directory(folder, {f.path: f.id for f in folders.folders.all(folder.kb_id)})


@router.post("/{kb_id}/dirs/{dir_id}/update", response_model=DirectoryModel)
def update_directory(
    kb_id: str, dir_id: str, body: DirectoryUpdateForm, view: ViewDep
) -> DirectoryModel:
    """Rename a folder or move it (``parent_id``: null to the top level; left out, it
    stays). Its files keep their embeddings."""
    folders = FolderService(view)
    try:
        with open_webui_errors(missing=404, forbidden=403):
            folder = folders.update(kb_id, dir_id, body.name, body.parent_id)
    except CitewellError as error:  # a name taken, a move into itself
        raise HTTPException(400, error.message) from error
    return _directory(folder, {f.path: f.id for f in folders.folders.all(folder.kb_id)})


@router.delete("/{kb_id}/dirs/{dir_id}/delete")
def delete_directory(
    kb_id: str, dir_id: str, view: ViewDep, move_files: bool = True
) -> dict[str, Any]:
    """Delete a folder (and those in it); its files move up to its parent, or with
    move_files=false leave the KB."""
    with open_webui_errors(missing=404, forbidden=403):
        removed = FolderService(view).delete(kb_id, dir_id, move_files)
    return {"status": True, "file_ids": [e.entry_id for e in removed]}


@router.post("/{kb_id}/file/move")
def move_file(kb_id: str, body: FileIdForm, view: ViewDep) -> dict[str, bool]:
    """Move a file to another folder (``directory_id``; null the top level). Nothing is
    parsed or embedded again."""
    with open_webui_errors(missing=404, forbidden=403):
        FolderService(view).move_entry(kb_id, body.file_id, body.directory_id)
    return {"status": True}
