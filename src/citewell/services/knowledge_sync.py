"""Filling a knowledge base the way Open WebUI's sync clients do: files uploaded on their own
(or straight into a KB folder), added to KBs by id, a manifest of (folder, name, SHA-256)
compared with what a KB holds, and the stale files and folders removed afterwards. Each
operation checks the caller's access itself; the HTTP shapes live in the adapter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from citewell.catalog import KnowledgeBase
from citewell.catalog.folders import Entry, ancestors, clean_folder, join
from citewell.catalog.uploads import Upload
from citewell.engine.scoped import Scoped
from citewell.errors import CitewellError, FileNotFound, InvalidInput
from citewell.services.folders import EntryView, FolderService

__all__ = ["KnowledgeSync", "ManifestEntry", "SyncDiff", "Upload", "Uploaded"]


@dataclass(frozen=True)
class ManifestEntry:
    path: str  # the folder: "docs/api", "" for the top level
    filename: str
    checksum: str  # SHA-256 of the bytes


@dataclass
class SyncDiff:
    added: list[tuple[str, str]] = field(default_factory=list)  # (folder, name)
    modified: list[tuple[str, str, str]] = field(default_factory=list)  # + stale entry id
    deleted: list[tuple[str, str]] = field(default_factory=list)  # (entry id, name)
    mkdir: list[str] = field(default_factory=list)
    rmdir: list[str] = field(default_factory=list)  # folder ids
    unmodified: int = 0
    folder_ids: dict[str, str] = field(default_factory=dict)  # path → id


@dataclass(frozen=True)
class Uploaded:
    """An upload held for its uploader, or (given a KB) the entry it became there."""

    upload: Upload
    entry: EntryView | None = None


class KnowledgeSync:
    def __init__(self, view: Scoped) -> None:
        self.view = view
        self.app = view.app
        self.folders = FolderService(view)

    # --- uploads ---------------------------------------------------------------------
    def upload(self, name: str, content_type: str, data: bytes, meta: dict[str, Any]) -> Uploaded:
        """Hold an upload; with ``meta["knowledge_id"]`` (and ``directory_id``) it goes
        straight into that KB folder, under its name (replacing a file of that name)."""
        kb = meta.get("knowledge_id")
        if kb is not None and not isinstance(kb, str):
            raise InvalidInput("metadata.knowledge_id must be a knowledge base id.")
        if not kb:
            held = Uploaded(self.app.uploads.add(self._user, name, content_type, data, meta))
        else:
            found = self.view.writable_kb(kb)
            folder = self.folders.folder_path(found.id, _str(meta.get("directory_id")))
            upload = self.app.uploads.add(self._user, name, content_type, data, meta)
            held = Uploaded(upload, self._ingest(found.id, upload, data, folder))
        kb_id = held.entry.entry.kb_id if held.entry is not None else None
        self.view.record("file.upload", "upload", held.upload.id, name=name, kb=kb_id)
        return held

    @property
    def max_upload_bytes(self) -> int:
        return self.app.settings.server.max_upload_bytes

    def files_of(self, kb_id: str) -> list[EntryView]:
        """The KB's files as its folders hold them."""
        found = self.view.kb(kb_id)
        return self.folders.views(found.id, self.app.catalog.folders.entries(found.id))

    def _ingest(self, kb_id: str, upload: Upload, data: bytes, folder: str) -> EntryView:
        path = join(folder, upload.name)
        record, _ = self.app.upload(kb_id, upload.name, data, self._user, path)
        self.app.catalog.folders.name_entry(kb_id, path, upload.id)
        self.app.uploads.became(upload.id, record.id)
        entry = self.app.catalog.folders.entry_at(kb_id, path)
        assert entry is not None
        (view,) = self.folders.views(kb_id, [entry])
        return view

    def get_upload(self, upload_id: str) -> Upload | None:
        return self.app.uploads.get(upload_id, self._user)

    # --- adding to a KB --------------------------------------------------------------
    def add(self, kb: str, file_id: str, folder_id: str | None = None) -> EntryView:
        """Put a file into a KB folder: the caller's own upload (read and ingested now) or a
        file of a KB the caller may read (linked: nothing is embedded again)."""
        added = self._add(kb, file_id, folder_id)
        self.view.record("file.add", "file", added.file.id, kb=added.entry.kb_id)
        return added

    def _add(self, kb: str, file_id: str, folder_id: str | None) -> EntryView:
        found = self.view.writable_kb(kb)
        folder = self.folders.folder_path(found.id, folder_id)
        upload = self.app.uploads.get(file_id, self._user)
        if upload is not None and not upload.file_id:
            data = self.app.uploads.read(upload.id)
            if data is None:
                raise FileNotFound(f"Upload {file_id!r} has expired; upload the file again.")
            return self._ingest(found.id, upload, data, folder)
        folders = self.app.catalog.folders
        held = folders.entry(found.id, file_id)
        if held is not None:  # added before: nothing to do
            return self.folders.views(found.id, [held])[0]
        record = self.view.file(upload.file_id if upload is not None else self._file_of(file_id))
        self.app.add_file(found.id, record.id, record.name, self._user, seen=record)
        # add_file names the path after the file; the entry keeps the id the client holds.
        entry = self._entry_for(found.id, record.id, join(folder, record.name))
        folders.name_entry(found.id, entry.path, file_id)
        return self.folders.views(found.id, [replace(entry, entry_id=file_id)])[0]

    def _file_of(self, entry_or_file_id: str) -> str:
        """The stored file an entry id of a readable KB names (else the id itself)."""
        access = self.view.access
        for entry in self.app.catalog.folders.with_id(entry_or_file_id):
            if access.can_read(entry.kb_id):
                return entry.file_id
        return entry_or_file_id

    def _entry_for(self, kb_id: str, file_id: str, path: str) -> Entry:
        """The newest path of ``file_id`` in the KB, moved to ``path`` if that is free."""
        entries = [e for e in self.app.catalog.folders.entries(kb_id) if e.file_id == file_id]
        newest = max(entries, key=lambda e: e.added_at)
        if newest.path == path or self.app.catalog.folders.entry_at(kb_id, path) is not None:
            return newest
        return self.app.catalog.folders.move_entry(kb_id, newest.entry_id, path)

    def add_many(
        self, kb: str, files: Sequence[tuple[str, str | None]]
    ) -> tuple[list[EntryView], list[str]]:
        """Each (file id, folder id) added; the errors of those that failed ("id: why")."""
        found = self.view.writable_kb(kb)
        added, errors = [], []
        for file_id, folder_id in files:
            try:
                added.append(self._add(found.id, file_id, folder_id))
            except CitewellError as error:  # this file's: unreadable, empty, not found
                errors.append(f"{file_id}: {error.message}")
        self.view.record("file.add", "knowledge_base", found.id, files=len(added))
        return added, errors

    def remove(self, kb: str, file_id: str) -> KnowledgeBase:
        """The file (by file or entry id) out of the KB; stored bytes go once no KB holds
        them."""
        found = self.view.writable_kb(kb)
        self.folders.remove(found.id, self.folders.entries_of(found.id, file_id))
        self.view.record("file.remove", "file", file_id, kb=found.id)
        return found

    # --- manifests -------------------------------------------------------------------
    def diff(self, kb: str, manifest: Sequence[ManifestEntry]) -> SyncDiff:
        """What a sync of these files (folder, name, SHA-256) must change in the KB."""
        found = self.view.writable_kb(kb)
        folders = self.app.catalog.folders.all(found.id)
        views = self.folders.views(found.id, self.app.catalog.folders.entries(found.id))
        held = {(v.entry.folder, v.entry.filename): v for v in views}
        result = SyncDiff(folder_ids={f.path: f.id for f in folders})
        wanted: set[tuple[str, str]] = set()
        for item in manifest:
            key = (clean_folder(item.path), item.filename)
            wanted.add(key)
            have = held.get(key)
            if have is None:
                result.added.append(key)
            elif have.file.sha256 != item.checksum.lower():
                result.modified.append((*key, have.entry.entry_id))
            else:
                result.unmodified += 1
        for key, have in held.items():
            if key not in wanted:
                result.deleted.append((have.entry.entry_id, key[1]))
        needed = {p for folder, _ in wanted for p in ancestors(folder)}
        result.mkdir = sorted(needed - result.folder_ids.keys(), key=lambda p: p.count("/"))
        result.rmdir = [i for p, i in result.folder_ids.items() if p not in needed]
        return result

    def cleanup(self, kb: str, entry_ids: Sequence[str], folder_ids: Sequence[str]) -> None:
        """Remove these entries and (deepest first) these folders; ids the KB does not
        have are skipped, as a repeated cleanup would find them gone."""
        found = self.view.writable_kb(kb)
        folders = self.app.catalog.folders
        entries = [e for i in entry_ids if (e := folders.entry(found.id, i)) is not None]
        self.folders.remove(found.id, entries)
        chosen = [f for i in folder_ids if (f := folders.get(found.id, i)) is not None]
        for folder in sorted(chosen, key=lambda f: -f.path.count("/")):
            below = folders.entries_below(found.id, folder.path)
            self.folders.remove(found.id, below)
            folders.remove(found.id, folder.id)
        self.view.record("kb.sync_cleanup", "knowledge_base", found.id, files=len(entry_ids))

    def reset(self, kb: str, include_folders: bool = True) -> None:
        """Every file out of the KB (and its folders too, with ``include_folders``)."""
        found = self.view.writable_kb(kb)
        folders = self.app.catalog.folders
        self.folders.remove(found.id, folders.entries(found.id))
        if include_folders:
            for folder in sorted(folders.all(found.id), key=lambda f: -f.path.count("/")):
                folders.remove(found.id, folder.id)
        self.view.record("kb.reset", "knowledge_base", found.id)

    @property
    def _user(self) -> str:
        return self.view.access.user_id


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
