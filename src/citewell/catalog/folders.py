"""Folders inside a KB and the entries in them. An entry is one path of the KB holding one
stored file (``knowledge_base_files``); its folder is the part of the path before the last
"/". Folders have rows of their own (``knowledge_folders``) so that they keep an id when
renamed and can be empty; the folders that entries' paths imply get their rows when a KB's
folders are first listed. Moving a file or a folder rewrites paths only: the stored file,
its chunks and vectors stay as they are.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from citewell.db.models import KnowledgeBaseFileRow, KnowledgeFolderRow
from citewell.errors import InvalidInput, PathTaken

MAX_PATH = 1000
WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]")


@dataclass(frozen=True)
class Folder:
    id: str
    kb_id: str
    path: str  # "docs/api": no leading or trailing "/"
    created_by: str
    created_at: float
    updated_at: float

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent_path(self) -> str:
        return parent_of(self.path)


@dataclass(frozen=True)
class Entry:
    """A path of a KB and the stored file it holds."""

    entry_id: str
    kb_id: str
    path: str
    file_id: str
    name: str  # the name callers see ("" for the last part of the path)
    added_by: str
    added_at: float

    @property
    def folder(self) -> str:
        return folder_of(self.path)

    @property
    def filename(self) -> str:
        return self.name or self.path.rsplit("/", 1)[-1]


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def folder_of(path: str) -> str:
    """The folder of a KB path. Only relative paths have one (a connector's "docs/a.md", an
    upload into a folder): a file ingested from the server's disk is keyed by its absolute
    path, a fetched page by its URL, and those stay at the top level (a server path must
    never show)."""
    if path.startswith(("/", "\\")) or "://" in path or WINDOWS_PATH.match(path):
        return ""
    return parent_of(path)


def join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def clean_folder(raw: str) -> str:
    """A folder path as given by a caller: "/" separated, no empty, "." or ".." parts."""
    parts = [p.strip() for p in raw.replace("\\", "/").split("/") if p.strip()]
    for part in parts:
        if part in (".", "..") or not part.isprintable():
            raise InvalidInput(f"{raw!r} is not a folder path: use names joined by '/'.")
    path = "/".join(parts)
    if len(path) > MAX_PATH - 256:
        raise InvalidInput(f"The folder path is longer than {MAX_PATH - 256} characters.")
    return path


def _folder(row: KnowledgeFolderRow) -> Folder:
    return Folder(row.id, row.kb_id, row.path, row.created_by, row.created_at, row.updated_at)


def _entry(row: KnowledgeBaseFileRow) -> Entry:
    return Entry(
        row.entry_id, row.kb_id, row.path, row.file_id, row.name, row.added_by, row.added_at
    )


def ancestors(path: str) -> list[str]:
    """ "a/b/c" → ["a", "a/b", "a/b/c"] ("" → [])."""
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))] if path else []


def _under(column: object, path: str) -> object:
    """SQL: the column's value lies below ``path`` (LIKE with its wildcards escaped)."""
    escaped = path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return column.like(escaped + "/%", escape="\\")  # type: ignore[attr-defined]


class Folders:
    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    # --- folders ---------------------------------------------------------------------
    def all(self, kb_id: str) -> list[Folder]:
        """Every folder of the KB, parents before children (those that paths imply too)."""
        try:
            return self._all(kb_id)
        except IntegrityError:  # another process made the same implied folder just now
            return self._all(kb_id)

    def _all(self, kb_id: str) -> list[Folder]:
        with self._sessions() as session, session.begin():
            have = {r.path: r for r in self._rows(session, kb_id)}
            implied = {
                folder
                for path in session.scalars(
                    select(KnowledgeBaseFileRow.path).where(KnowledgeBaseFileRow.kb_id == kb_id)
                )
                for folder in ancestors(folder_of(path))
            }
            for path in sorted(implied - have.keys()):
                have[path] = self._add(session, kb_id, path, "")
            return sorted((_folder(r) for r in have.values()), key=lambda f: f.path)

    def get(self, kb_id: str, folder_id: str) -> Folder | None:
        with self._sessions() as session:
            row = session.get(KnowledgeFolderRow, folder_id)
            return _folder(row) if row is not None and row.kb_id == kb_id else None

    def make(self, kb_id: str, path: str, created_by: str) -> tuple[Folder, bool]:
        """The folder at ``path`` (and its parents), and whether it was made now."""
        with self._sessions() as session, session.begin():
            have = {r.path: r for r in self._rows(session, kb_id)}
            made = path not in have
            for folder in ancestors(path):
                if folder not in have:
                    have[folder] = self._add(session, kb_id, folder, created_by)
            return _folder(have[path]), made

    def move(self, kb_id: str, folder_id: str, new_path: str) -> Folder:
        """Rename or move a folder with everything in it (its id stays)."""
        self.all(kb_id)  # rows for implied folders: a move must see every folder there is
        with self._sessions() as session, session.begin():
            row = session.get(KnowledgeFolderRow, folder_id)
            assert row is not None and row.kb_id == kb_id
            old = row.path
            if new_path == old:
                return _folder(row)
            if new_path.startswith(old + "/"):
                raise InvalidInput(f"A folder cannot move into itself ({old!r} → {new_path!r}).")
            if self._taken(session, kb_id, new_path):
                raise PathTaken(f"{new_path!r} exists already in this knowledge base.")
            for parent in ancestors(parent_of(new_path)):
                if not self._row(session, kb_id, parent):
                    self._add(session, kb_id, parent, row.created_by)
            self._rename_below(session, kb_id, old, new_path)
            row.path, row.updated_at = new_path, time.time()
            return _folder(row)

    def remove(self, kb_id: str, folder_id: str) -> None:
        """The folder and the folders below it (their entries are the caller's to move or
        remove first)."""
        with self._sessions() as session, session.begin():
            row = session.get(KnowledgeFolderRow, folder_id)
            if row is None or row.kb_id != kb_id:
                return
            below = session.scalars(
                select(KnowledgeFolderRow).where(
                    (KnowledgeFolderRow.kb_id == kb_id) & _under(KnowledgeFolderRow.path, row.path)  # type: ignore[arg-type]
                )
            )
            for child in [*below, row]:
                session.delete(child)

    def _rows(self, session: Session, kb_id: str) -> list[KnowledgeFolderRow]:
        query = select(KnowledgeFolderRow).where(KnowledgeFolderRow.kb_id == kb_id)
        return list(session.scalars(query))

    def _row(self, session: Session, kb_id: str, path: str) -> KnowledgeFolderRow | None:
        query = select(KnowledgeFolderRow).where(
            (KnowledgeFolderRow.kb_id == kb_id) & (KnowledgeFolderRow.path == path)
        )
        return session.scalars(query).first()

    @staticmethod
    def _add(session: Session, kb_id: str, path: str, created_by: str) -> KnowledgeFolderRow:
        row = KnowledgeFolderRow(kb_id=kb_id, path=path, created_by=created_by)
        session.add(row)
        session.flush()
        return row

    def _taken(self, session: Session, kb_id: str, path: str) -> bool:
        entry = session.get(KnowledgeBaseFileRow, (kb_id, path))
        return entry is not None or self._row(session, kb_id, path) is not None

    def _rename_below(self, session: Session, kb_id: str, old: str, new: str) -> None:
        """Every folder and entry below ``old`` now lies below ``new``."""
        now = time.time()
        folders = session.scalars(
            select(KnowledgeFolderRow).where(
                (KnowledgeFolderRow.kb_id == kb_id) & _under(KnowledgeFolderRow.path, old)  # type: ignore[arg-type]
            )
        )
        for folder in folders:
            folder.path, folder.updated_at = new + folder.path[len(old) :], now
        entries = session.scalars(
            select(KnowledgeBaseFileRow).where(
                (KnowledgeBaseFileRow.kb_id == kb_id) & _under(KnowledgeBaseFileRow.path, old)  # type: ignore[arg-type]
            )
        )
        for entry in entries:
            entry.path = new + entry.path[len(old) :]

    # --- entries ---------------------------------------------------------------------
    def entries(self, kb_id: str, folder: str | None = None) -> list[Entry]:
        """The KB's entries (``folder``: only those right in it; "" the KB's top level)."""
        query = select(KnowledgeBaseFileRow).where(KnowledgeBaseFileRow.kb_id == kb_id)
        if folder:
            query = query.where(_under(KnowledgeBaseFileRow.path, folder))  # type: ignore[arg-type]
        with self._sessions() as session:
            found = [_entry(r) for r in session.scalars(query)]
        return [e for e in found if folder is None or e.folder == folder]

    def entries_below(self, kb_id: str, folder: str) -> list[Entry]:
        """Entries in the folder or any folder below it."""
        query = select(KnowledgeBaseFileRow).where(
            (KnowledgeBaseFileRow.kb_id == kb_id) & _under(KnowledgeBaseFileRow.path, folder)  # type: ignore[arg-type]
        )
        with self._sessions() as session:
            return [_entry(r) for r in session.scalars(query)]

    def entry(self, kb_id: str, entry_id: str) -> Entry | None:
        query = select(KnowledgeBaseFileRow).where(
            (KnowledgeBaseFileRow.kb_id == kb_id) & (KnowledgeBaseFileRow.entry_id == entry_id)
        )
        with self._sessions() as session:
            row = session.scalars(query).first()
            return _entry(row) if row is not None else None

    def with_id(self, entry_id: str) -> list[Entry]:
        """The entries with this id, in any KB (an upload added to several has one in each)."""
        query = select(KnowledgeBaseFileRow).where(KnowledgeBaseFileRow.entry_id == entry_id)
        with self._sessions() as session:
            return [_entry(r) for r in session.scalars(query)]

    def entry_at(self, kb_id: str, path: str) -> Entry | None:
        with self._sessions() as session:
            row = session.get(KnowledgeBaseFileRow, (kb_id, path))
            return _entry(row) if row is not None else None

    def count(self, kb_id: str) -> int:
        query = select(func.count()).where(KnowledgeBaseFileRow.kb_id == kb_id)
        with self._sessions() as session:
            return int(session.scalar(query) or 0)

    def move_entry(self, kb_id: str, entry_id: str, new_path: str) -> Entry:
        """The entry under a new path (its id, file and embeddings stay)."""
        with self._sessions() as session, session.begin():
            row = session.scalars(
                select(KnowledgeBaseFileRow).where(
                    (KnowledgeBaseFileRow.kb_id == kb_id)
                    & (KnowledgeBaseFileRow.entry_id == entry_id)
                )
            ).first()
            assert row is not None
            if row.path == new_path:
                return _entry(row)
            if self._taken(session, kb_id, new_path):
                raise PathTaken(f"{new_path!r} exists already in this knowledge base.")
            row.path = new_path  # the key: the ORM updates the row in place
            return _entry(row)

    def name_entry(self, kb_id: str, path: str, entry_id: str) -> None:
        """Give the entry at ``path`` this id (an upload's id, as Open WebUI's clients
        hold it)."""
        with self._sessions() as session, session.begin():
            session.execute(
                update(KnowledgeBaseFileRow)
                .where((KnowledgeBaseFileRow.kb_id == kb_id) & (KnowledgeBaseFileRow.path == path))
                .values(entry_id=entry_id)
            )
