"""Folders inside a knowledge base and the entries (paths) in them, as one caller sees them:
listing needs read access, every change write access, each checked here. Moves rewrite paths
only; nothing is parsed or embedded again."""

from __future__ import annotations

from dataclasses import dataclass

from citewell.catalog import FileRecord, KnowledgeBase
from citewell.catalog.folders import Entry, Folder, ancestors, clean_folder, join
from citewell.engine.scoped import Scoped
from citewell.errors import FileNotFound, FolderNotFound, InvalidInput

__all__ = ["Entry", "EntryPage", "EntryView", "Folder", "FolderService"]

ORDERS = ("name", "created_at", "updated_at")
UNSET = "__unset__"  # Open WebUI's "leave the parent alone"


@dataclass(frozen=True)
class EntryView:
    """An entry with its stored file."""

    entry: Entry
    file: FileRecord
    folder_id: str | None  # None: the KB's top level

    @property
    def display_path(self) -> str:
        """Folder and name, as citations and the viewer show it."""
        return join(self.entry.folder, self.entry.filename)


@dataclass(frozen=True)
class EntryPage:
    items: list[EntryView]
    total: int
    folders: list[Folder]  # the folders right inside the one listed
    breadcrumbs: list[Folder]  # from the top level down to the one listed
    folder_ids: dict[str, str]  # every folder's id by its path


@dataclass(frozen=True)
class PageRequest:
    folder_id: str | None = None  # None: every entry; "": the top level only
    query: str = ""
    order_by: str = "updated_at"
    descending: bool = True
    page: int = 1
    size: int = 30


class FolderService:
    def __init__(self, view: Scoped) -> None:
        self.view = view
        self.app = view.app
        self.folders = view.app.catalog.folders

    # --- reading -----------------------------------------------------------------------
    def tree(self, kb: str) -> tuple[KnowledgeBase, list[Folder]]:
        found = self.view.kb(kb)
        return found, self.folders.all(found.id)

    def page(self, kb: str, request: PageRequest) -> EntryPage:
        found = self.view.kb(kb)
        folders = self.folders.all(found.id)
        by_path = {f.path: f for f in folders}
        folder = self._folder_path(found.id, request.folder_id)
        views = self.views(found.id, self.folders.entries(found.id, folder), by_path)
        if request.query:
            views = [v for v in views if request.query.lower() in v.entry.filename.lower()]
        views = _sorted(views, request.order_by, request.descending)
        start = (max(request.page, 1) - 1) * request.size
        listed = folder or ""
        return EntryPage(
            items=views[start : start + request.size],
            total=len(views),
            folders=[f for f in folders if f.parent_path == listed],
            breadcrumbs=[by_path[p] for p in ancestors(listed) if p in by_path],
            folder_ids={f.path: f.id for f in folders},
        )

    def views(
        self, kb_id: str, entries: list[Entry], by_path: dict[str, Folder] | None = None
    ) -> list[EntryView]:
        """Entries with their files, as this caller sees them (the KB is readable)."""
        if by_path is None:
            by_path = {f.path: f for f in self.folders.all(kb_id)}
        records = {r.id: r for r in self.app.catalog.files_by_id({e.file_id for e in entries})}
        return [
            EntryView(e, records[e.file_id], _folder_id(by_path, e.folder))
            for e in entries
            if e.file_id in records
        ]

    def entries_of(self, kb_id: str, entry_or_file_id: str) -> list[Entry]:
        """The entries an id names in the KB: the entry with that id, or every path of the
        stored file with that id. None: a 404, as for a file that does not exist."""
        entry = self.folders.entry(kb_id, entry_or_file_id)
        if entry is not None:
            return [entry]
        found = [e for e in self.folders.entries(kb_id) if e.file_id == entry_or_file_id]
        if not found:
            raise FileNotFound(
                f"No file {entry_or_file_id!r} in this knowledge base; "
                "GET /api/v1/knowledge/{id}/files lists them."
            )
        return found

    def folder(self, kb_id: str, folder_id: str) -> Folder:
        found = self.folders.get(kb_id, folder_id)
        if found is None:
            raise FolderNotFound(
                f"No folder {folder_id!r} in this knowledge base; "
                "GET /api/v1/knowledge/{id}/folders lists them."
            )
        return found

    def _folder_path(self, kb_id: str, folder_id: str | None) -> str | None:
        if folder_id is None or folder_id == "":
            return folder_id
        return self.folder(kb_id, folder_id).path

    def folder_path(self, kb_id: str, folder_id: str | None) -> str:
        """The path of a folder given by id (None or "": the top level)."""
        return self._folder_path(kb_id, folder_id) or ""

    # --- changing ----------------------------------------------------------------------
    def make(self, kb: str, name: str, parent_id: str | None = None) -> tuple[Folder, bool]:
        """A folder (by name, inside ``parent_id``; a name may hold "/": nested folders)."""
        found = self.view.writable_kb(kb)
        parent = self.folder_path(found.id, parent_id)
        path = clean_folder(join(parent, name))
        if not path or path == parent:
            raise InvalidInput("Give the folder a name.")
        return self.folders.make(found.id, path, self.view.access.user_id)

    def update(
        self, kb: str, folder_id: str, name: str | None, parent_id: str | None = UNSET
    ) -> Folder:
        """Rename a folder and/or move it (``parent_id`` None: to the top level)."""
        found = self.view.writable_kb(kb)
        folder = self.folder(found.id, folder_id)
        parent = folder.parent_path if parent_id == UNSET else self.folder_path(found.id, parent_id)
        new_name = clean_folder(name) if name is not None else folder.name
        if not new_name or "/" in new_name:
            raise InvalidInput("A folder's name is one non-empty part, without '/'.")
        return self.folders.move(found.id, folder.id, join(parent, new_name))

    def delete(self, kb: str, folder_id: str, move_files: bool = True) -> list[Entry]:
        """Delete a folder and the folders in it. Their files move to the folder's parent
        (``move_files``), else leave the KB. Returns the entries that left."""
        found = self.view.writable_kb(kb)
        folder = self.folder(found.id, folder_id)
        below = self.folders.entries_below(found.id, folder.path)
        if move_files:
            for entry in below:
                target = join(folder.parent_path, entry.path.rsplit("/", 1)[-1])
                self.folders.move_entry(found.id, entry.entry_id, self._free(found.id, target))
        else:
            self.remove(found.id, below)
        self.folders.remove(found.id, folder.id)
        return [] if move_files else below

    def move_entry(self, kb: str, entry_or_file_id: str, folder_id: str | None) -> list[Entry]:
        """Move a file (an entry, or every path of a stored file) into a folder."""
        found = self.view.writable_kb(kb)
        folder = self.folder_path(found.id, folder_id)
        moved = []
        for entry in self.entries_of(found.id, entry_or_file_id):
            target = join(folder, entry.path.rsplit("/", 1)[-1])
            moved.append(self.folders.move_entry(found.id, entry.entry_id, target))
        return moved

    def remove(self, kb_id: str, entries: list[Entry]) -> None:
        """Take these paths out of the (writable) KB; a file with no path left in it leaves
        the KB (and is deleted once no KB holds it)."""
        ingestor = self.app.ingestor
        with ingestor.lock:
            for entry in entries:
                self.app.catalog.synced.forget(kb_id, entry.path)
                if not self.app.catalog.paths_in_kb(kb_id, entry.file_id):
                    ingestor.remove_from_kb(kb_id, entry.file_id)

    def _free(self, kb_id: str, path: str) -> str:
        """``path``, or the first "name (n)" that is free."""
        stem, dot, ext = path.rpartition(".")
        if not dot or "/" in ext:
            stem, dot, ext = path, "", ""
        candidate, n = path, 1
        while self.folders.entry_at(kb_id, candidate) is not None:
            n += 1
            candidate = f"{stem} ({n}){dot}{ext}"
        return candidate


def _folder_id(by_path: dict[str, Folder], path: str) -> str | None:
    folder = by_path.get(path) if path else None
    return folder.id if folder is not None else None


def _sorted(views: list[EntryView], order_by: str, descending: bool) -> list[EntryView]:
    if order_by == "name":
        key = lambda v: (v.entry.filename.lower(), v.entry.entry_id)  # noqa: E731
    elif order_by == "created_at":
        key = lambda v: (v.file.created_at, v.entry.entry_id)  # noqa: E731
    else:
        key = lambda v: (v.entry.added_at, v.entry.entry_id)  # noqa: E731
    return sorted(views, key=key, reverse=descending)
