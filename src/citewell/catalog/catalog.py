"""The catalog: knowledge bases, files and which file belongs to which KB under what path."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from citewell.catalog.file_ids import FileIds
from citewell.catalog.file_rows import table_of, upsert_files
from citewell.catalog.folders import Folders
from citewell.catalog.kb_settings import NO_SETTINGS, KnowledgeSettings, common
from citewell.catalog.link_rows import IN_LIST, FileLink, link_row, new_link_values, taken_paths
from citewell.catalog.synced_paths import SyncedPaths
from citewell.db import ensure_schema
from citewell.db.bulk import insert_rows
from citewell.db.changes import ChangeCache, change_counter
from citewell.db.engine import read_sessions
from citewell.db.models import FileRow, KnowledgeBaseFileRow, KnowledgeBaseRow
from citewell.errors import AmbiguousName, InvalidInput, KnowledgeBaseNotFound, NameTaken


@dataclass(frozen=True)
class KnowledgeBase:
    id: str
    name: str
    description: str
    created_at: float
    updated_at: float
    file_count: int = 0
    owner_id: str = ""  # "": made without authentication
    settings: KnowledgeSettings = NO_SETTINGS  # its own retrieval defaults


@dataclass(frozen=True)
class FileRecord:
    id: str
    sha256: str
    text_sha256: str
    name: str
    mime_type: str
    size: int
    chunk_count: int
    status: str
    created_at: float
    source: str = "upload"  # upload, text, url, web-search or youtube
    url: str = ""
    title: str = ""
    tenant: str = ""  # the owner of the KBs holding it ("": the operator's)

    @property
    def text_is_original(self) -> bool:
        """Its bytes are its text (plain text, an import's file): only the text is stored."""
        return self.sha256 == self.text_sha256


def _link(row: KnowledgeBaseFileRow) -> FileLink:
    return FileLink(
        row.kb_id,
        row.file_id,
        row.path,
        row.name,
        row.added_by,
        row.added_at,
        row.source,
        row.url,
        row.entry_id,
    )


def _kb(row: KnowledgeBaseRow, file_count: int = 0) -> KnowledgeBase:
    return KnowledgeBase(
        row.id,
        row.name,
        row.description,
        row.created_at,
        row.updated_at,
        file_count,
        row.owner_id,
        KnowledgeSettings.from_json(row.settings),
    )


def _file(row: FileRow) -> FileRecord:
    return FileRecord(
        row.id,
        row.sha256,
        row.text_sha256,
        row.name,
        row.mime_type,
        row.size,
        row.chunk_count,
        row.status,
        row.created_at,
        row.source,
        row.url,
        row.title,
        row.tenant,
    )


def _ambiguous(name: str, kbs: list[KnowledgeBase]) -> str:
    listed = "; ".join(f"id {kb.id} (owner {kb.owner_id or 'none'})" for kb in kbs)
    return (
        f"{len(kbs)} knowledge bases you may read are named {name!r}: {listed}. "
        "Name the one you mean by its id."
    )


class Catalog:
    """What the database knows of knowledge bases, files and their links (paths, folders),
    with no access checks: the engine's and the services' to use."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._reads = read_sessions(engine)
        self.file_id = FileIds(engine)  # (tenant, sha256) → the id of a new file
        self.synced = SyncedPaths(engine)  # the paths connectors keep, with versions
        self.folders = Folders(engine)  # folders and the entries (paths) in them
        # What searches read on every call, kept until the database changes (db/changes.py).
        counter = change_counter(engine)
        self._kb_settings: ChangeCache[frozenset[str], KnowledgeSettings] = ChangeCache(counter)
        self._kb_by_id: ChangeCache[str, KnowledgeBase | None] = ChangeCache(counter)
        self._kbs_named: ChangeCache[str, tuple[KnowledgeBase, ...]] = ChangeCache(counter)
        self._file_links: ChangeCache[str, tuple[FileLink, ...]] = ChangeCache(counter)
        self._files: ChangeCache[str, FileRecord] = ChangeCache(counter)

    def _session(self) -> Session:
        return self._sessions()

    # --- knowledge bases ----------------------------------------------------------
    def create_kb(
        self,
        name: str,
        description: str = "",
        owner_id: str = "",
        settings: KnowledgeSettings = NO_SETTINGS,
    ) -> KnowledgeBase:
        name = name.strip()
        if not name:
            raise InvalidInput("A knowledge base needs a name.")
        with self._session() as session, session.begin():
            self._check_free(session, name, owner_id)
            row = KnowledgeBaseRow(
                name=name, description=description, owner_id=owner_id, settings=settings.to_json()
            )
            session.add(row)
        return _kb(row)

    def update_kb(
        self,
        kb_id: str,
        name: str | None = None,
        description: str | None = None,
        settings: KnowledgeSettings | None = None,
    ) -> KnowledgeBase:
        with self._session() as session, session.begin():
            row = session.get(KnowledgeBaseRow, kb_id)
            if row is None:
                raise KnowledgeBaseNotFound(f"No knowledge base {kb_id!r}.")
            if name is not None and name.strip() and name.strip() != row.name:
                self._check_free(session, name.strip(), row.owner_id)
                row.name = name.strip()
            if description is not None:
                row.description = description
            if settings is not None:
                row.settings = settings.to_json()
            row.updated_at = time.time()
        return _kb(row)

    @staticmethod
    def _check_free(session: Session, name: str, owner_id: str) -> None:
        """Names are unique per owner: only the owner's own names can clash."""
        taken = select(KnowledgeBaseRow.id).where(
            (KnowledgeBaseRow.owner_id == owner_id) & (KnowledgeBaseRow.name == name)
        )
        if session.scalar(taken) is not None:
            raise NameTaken(
                f"A knowledge base named {name!r} with the same owner exists already; pick "
                "another name (names are unique per owner)."
            )

    def resolve_kb(
        self,
        name_or_id: str,
        can_read: Callable[[KnowledgeBase], bool] | None = None,
        owner_id: str = "",
        count_files: bool = True,
    ) -> KnowledgeBase | None:
        """The KB with this id, else the one with this name among those ``can_read`` allows
        (None: all): the one ``owner_id`` owns if any, else the only one. A name that several
        readable KBs of others carry is ambiguous: AmbiguousName lists them (409).
        ``count_files`` False leaves file_count 0 (a search needs only the id)."""
        allowed = can_read or (lambda _: True)
        kb = self._kb_by_id.get(name_or_id, lambda: self._read_kb(name_or_id))
        if kb is None or not allowed(kb):
            named = self._kbs_named.get(name_or_id, lambda: self._read_kbs_named(name_or_id))
            found = [k for k in named if allowed(k)]
            own = [k for k in found if k.owner_id == owner_id]
            if len(found) > 1 and not own:
                raise AmbiguousName(_ambiguous(name_or_id, found))
            kb = next(iter(own or found), None)
        if kb is None or not count_files:
            return kb
        with self._reads() as session:
            return replace(kb, file_count=self._file_count(session, kb.id))

    def _read_kb(self, kb_id: str) -> KnowledgeBase | None:
        with self._reads() as session:
            row = session.get(KnowledgeBaseRow, kb_id)
            return None if row is None else _kb(row)

    def _read_kbs_named(self, name: str) -> tuple[KnowledgeBase, ...]:
        query = (
            select(KnowledgeBaseRow)
            .where(KnowledgeBaseRow.name == name)
            .order_by(KnowledgeBaseRow.created_at)
        )
        with self._reads() as session:
            return tuple(_kb(row) for row in session.scalars(query))

    def find_kb(self, name_or_id: str) -> KnowledgeBase | None:
        """As the local operator (CLI, library) sees it: every KB readable; file_count 0."""
        return self.resolve_kb(name_or_id, count_files=False)

    def get_kb(self, name_or_id: str) -> KnowledgeBase:
        kb = self.find_kb(name_or_id)
        if kb is None:
            raise KnowledgeBaseNotFound(
                f"No knowledge base {name_or_id!r}; list them with 'citewell kb list'."
            )
        return kb

    def ensure_kb(self, name_or_id: str) -> KnowledgeBase:
        """The KB with this id, or the operator's own (made here, no owner) of this name, made
        if missing (file_count 0): the CLI never writes into a user's KB because of its name."""
        own = self.resolve_kb(name_or_id, lambda k: k.id == name_or_id or not k.owner_id, "", False)
        return own or self.create_kb(name_or_id)

    def list_kbs(
        self, kb_ids: Collection[str] | None = None, count_files: bool = True
    ) -> list[KnowledgeBase]:
        """Every KB by name, or those of ``kb_ids``; ``count_files`` False: file_count 0,
        one query in all instead of one more per KB."""
        query = select(KnowledgeBaseRow).order_by(KnowledgeBaseRow.name)
        if kb_ids is not None:
            query = query.where(KnowledgeBaseRow.id.in_(list(kb_ids)))
        with self._reads() as session:
            rows = session.scalars(query)
            return [_kb(r, self._file_count(session, r.id) if count_files else 0) for r in rows]

    def kb_settings(self, kb_ids: Collection[str]) -> KnowledgeSettings:
        """The retrieval defaults these KBs share (none when they differ or set none).
        Asked on every search: kept until the database changes (db/changes.py)."""
        if not kb_ids:
            return NO_SETTINGS
        key = frozenset(kb_ids)
        return self._kb_settings.get(key, lambda: self._read_kb_settings(key))

    def _read_kb_settings(self, kb_ids: frozenset[str]) -> KnowledgeSettings:
        query = select(KnowledgeBaseRow.settings).where(KnowledgeBaseRow.id.in_(list(kb_ids)))
        with self._reads() as session:
            texts = session.scalars(query).all()
        return common(KnowledgeSettings.from_json(t) for t in texts)

    def delete_kb(self, kb_id: str) -> None:
        with self._session() as session, session.begin():
            row = session.get(KnowledgeBaseRow, kb_id)
            if row is not None:
                session.query(KnowledgeBaseFileRow).filter_by(kb_id=kb_id).delete()
                session.delete(row)

    def _file_count(self, session: Session, kb_id: str) -> int:
        return (
            session.scalar(
                select(func.count())
                .select_from(KnowledgeBaseFileRow)
                .where(KnowledgeBaseFileRow.kb_id == kb_id)
            )
            or 0
        )

    # --- files ------------------------------------------------------------------------
    def file_by_sha(self, sha256: str, tenant: str) -> FileRecord | None:
        """The tenant's file of these bytes (another tenant's is never found: decision 0020)."""
        return self.files_by_sha([sha256], tenant).get(sha256)

    def files_by_sha(self, digests: Collection[str], tenant: str) -> dict[str, FileRecord]:
        """The tenant's files of these bytes, in one query a few hundred: digest → file."""
        wanted, found = list(dict.fromkeys(digests)), {}
        with self._reads() as session:
            for start in range(0, len(wanted), IN_LIST):
                part = wanted[start : start + IN_LIST]
                query = select(FileRow).where(FileRow.sha256.in_(part) & (FileRow.tenant == tenant))
                found.update({row.sha256: _file(row) for row in session.scalars(query)})
        return found

    def get_file(self, file_id: str) -> FileRecord | None:
        with self._reads() as session:
            row = session.get(FileRow, file_id)
            return _file(row) if row else None

    def files_by_id(self, file_ids: Collection[str]) -> list[FileRecord]:
        return list(self._files.get_many(file_ids, self._read_files).values())

    def _read_files(self, file_ids: Collection[str]) -> dict[str, FileRecord]:
        with self._reads() as session:
            rows = session.scalars(select(FileRow).where(FileRow.id.in_(list(file_ids))))
            return {r.id: _file(r) for r in rows}

    def add_file(self, record: FileRecord) -> None:
        self.add_files([record])

    def add_files(self, records: Sequence[FileRecord], new: bool = False) -> None:
        """Files in one transaction: merged (one may exist already), or inserted in one
        statement when they are ``new`` (an import's batch)."""
        if not records:
            return
        with self._session() as session, session.begin():
            if new:
                insert_rows(session, table_of(FileRow), [r.__dict__ for r in records])
            else:
                upsert_files(session, [r.__dict__ for r in records])

    def delete_file(self, file_id: str) -> None:
        with self._session() as session, session.begin():
            session.query(KnowledgeBaseFileRow).filter_by(file_id=file_id).delete()
            session.query(FileRow).filter_by(id=file_id).delete()

    def files_in_kb(
        self, kb_id: str, paths: Collection[str] | None = None
    ) -> dict[str, FileRecord]:
        """Path → file for every file in the KB, or for those of ``paths`` it holds (what
        an ingest of those paths reads: not the whole KB, which grows with every batch)."""
        query = (
            select(KnowledgeBaseFileRow.path, FileRow)
            .join(FileRow, FileRow.id == KnowledgeBaseFileRow.file_id)
            .where(KnowledgeBaseFileRow.kb_id == kb_id)
        )
        wanted = [None] if paths is None else list(dict.fromkeys(paths))
        found: dict[str, FileRecord] = {}
        with self._reads() as session:
            for start in range(0, len(wanted), IN_LIST):
                part = wanted[start : start + IN_LIST]
                some = query if paths is None else query.where(KnowledgeBaseFileRow.path.in_(part))
                found.update({path: _file(row) for path, row in session.execute(some)})
        return found

    def link(
        self,
        kb_id: str,
        file_id: str,
        path: str,
        name: str = "",
        added_by: str = "",
        source: str = "",
        url: str = "",
    ) -> None:
        """Put ``file_id`` in the KB under ``path``, replacing whatever was there; ``name``,
        ``added_by``, ``source`` and ``url`` are what callers see of this link (the file's
        own where empty)."""
        now = time.time()
        self.add_links([FileLink(kb_id, file_id, path, name, added_by, now, source, url)])

    def add_links(self, links: Sequence[FileLink]) -> None:
        """Each link in one transaction, replacing what its KB had under its path."""
        now = time.time()
        links = list({(link.kb_id, link.path): link for link in links}.values())  # last wins
        with self._session() as session, session.begin():
            taken = taken_paths(session, links)
            fresh = [new_link_values(k, now) for k in links if (k.kb_id, k.path) not in taken]
            if fresh:  # new paths in one statement; a taken one merged
                insert_rows(session, table_of(KnowledgeBaseFileRow), fresh)
            for link in links:
                if (link.kb_id, link.path) in taken:
                    session.merge(link_row(link, now))
            kbs = KnowledgeBaseRow.id.in_(sorted({link.kb_id for link in links}))
            session.execute(update(KnowledgeBaseRow).where(kbs).values(updated_at=now))

    def existing_files(self, file_ids: Collection[str]) -> set[str]:
        """Which of these files the catalog holds."""
        ids, found = list(file_ids), set()
        with self._reads() as session:
            for start in range(0, len(ids), IN_LIST):
                query = select(FileRow.id).where(FileRow.id.in_(ids[start : start + IN_LIST]))
                found |= set(session.scalars(query))
        return found

    def links(
        self, file_ids: Collection[str] | None = None, kb_ids: Collection[str] | None = None
    ) -> list[FileLink]:
        """Links of these files and/or in these KBs (None: any), oldest first."""
        in_kbs = None if kb_ids is None else set(kb_ids)
        if file_ids is not None:
            # Not both in SQL: given a KB too, SQLite walked the KB's whole key range (2 ms
            # for a KB of 5,000 files, on every search) instead of the few rows of the files.
            by_file = self._file_links.get_many(file_ids, self._read_links)
            found = [link for links in by_file.values() for link in links]
        else:
            query = select(KnowledgeBaseFileRow).order_by(KnowledgeBaseFileRow.added_at)
            if kb_ids is not None:
                query = query.where(KnowledgeBaseFileRow.kb_id.in_(list(kb_ids)))
            with self._reads() as session:
                found = [_link(r) for r in session.scalars(query)]
        chosen = [k for k in found if in_kbs is None or k.kb_id in in_kbs]
        return sorted(chosen, key=lambda link: link.added_at)

    def _read_links(self, file_ids: Collection[str]) -> dict[str, tuple[FileLink, ...]]:
        query = select(KnowledgeBaseFileRow).where(KnowledgeBaseFileRow.file_id.in_(list(file_ids)))
        by_file: dict[str, list[FileLink]] = {}
        with self._reads() as session:
            for row in session.scalars(query):
                by_file.setdefault(row.file_id, []).append(_link(row))
        return {file_id: tuple(links) for file_id, links in by_file.items()}

    def unlink(self, kb_id: str, file_id: str) -> None:
        """Take the file out of the KB under every path it has there."""
        with self._session() as session, session.begin():
            session.query(KnowledgeBaseFileRow).filter_by(kb_id=kb_id, file_id=file_id).delete()

    def paths_in_kb(self, kb_id: str, file_id: str) -> list[str]:
        row = KnowledgeBaseFileRow
        query = select(row.path).where((row.kb_id == kb_id) & (row.file_id == file_id))
        with self._reads() as session:
            return list(session.scalars(query))

    def kbs_of_files(self) -> dict[str, list[str]]:
        """Every file's KBs (files in none are missing), in one query."""
        found: dict[str, set[str]] = {}
        query = select(KnowledgeBaseFileRow.file_id, KnowledgeBaseFileRow.kb_id)
        with self._reads() as session:
            for file_id, kb_id in session.execute(query):
                found.setdefault(file_id, set()).add(kb_id)
        return {file_id: sorted(kbs) for file_id, kbs in found.items()}

    def kbs_of_file(self, file_id: str) -> list[str]:
        query = select(KnowledgeBaseFileRow.kb_id).where(KnowledgeBaseFileRow.file_id == file_id)
        with self._reads() as session:
            return sorted(set(session.scalars(query)))

    def list_files(self) -> list[FileRecord]:
        with self._reads() as session:
            return [_file(r) for r in session.scalars(select(FileRow).order_by(FileRow.created_at))]
