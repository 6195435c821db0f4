"""Citewell as one caller sees it. The HTTP API reaches knowledge bases, files and chunks only
through here: KBs the caller may not read do not exist for it (404, like a KB that does not
exist), and every chunk search carries the caller's readable KBs in the store's own filter."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Any

from citewell.auth.access import Access
from citewell.catalog import FileLink, FileRecord, KnowledgeBase
from citewell.catalog.kb_settings import NO_SETTINGS, KnowledgeSettings
from citewell.embedders import embedding_tenant
from citewell.engine.core import Engine
from citewell.errors import FileNotFound, Forbidden, InvalidInput, KnowledgeBaseNotFound
from citewell.retrieval import RetrievalTrace
from citewell.types import ChunkFilter, ScoredChunk, SearchMode, Section


@dataclass
class Scoped:
    """One caller's view of the engine: what they may read, change and manage, checked on
    every call, and the audit trail their changes are recorded in (``record``)."""

    app: Engine
    access: Access

    def record(self, action: str, target_type: str, target_id: str, **detail: Any) -> None:
        """An audit event of this caller's (services call it after a change succeeded)."""
        self.app.accounts.audit.record(self.access, action, target_type, target_id, **detail)

    # --- knowledge bases ------------------------------------------------------------------
    def kbs(self, count_files: bool = True) -> list[KnowledgeBase]:
        return self.app.catalog.list_kbs(self.access.readable, count_files)

    def find_kb(self, name_or_id: str, count_files: bool = True) -> KnowledgeBase | None:
        """By id, or by name among the KBs the caller may read (their own first); a name
        several others' KBs carry is a 409 that lists them. ``count_files`` False: a
        file_count of 0, one query less (what a search needs is the id)."""
        access = self.access
        return self.app.catalog.resolve_kb(name_or_id, access.can_read, access.user_id, count_files)

    def kb(self, name_or_id: str) -> KnowledgeBase:
        kb = self.find_kb(name_or_id)
        if kb is None:
            raise KnowledgeBaseNotFound(
                f"No knowledge base {name_or_id!r} that you may read; GET /api/v1/knowledge "
                "(or `citewell kb list`) lists yours."
            )
        return kb

    def writable_kb(self, name_or_id: str) -> KnowledgeBase:
        kb = self.kb(name_or_id)
        if not self.access.can_write(kb):
            raise Forbidden(
                f"You may read knowledge base {kb.name!r} but not change it; ask its owner "
                "for a write grant (or use a key that is not read-only)."
            )
        return kb

    def managed_kb(self, name_or_id: str) -> KnowledgeBase:
        kb = self.kb(name_or_id)
        if not self.access.can_manage(kb):
            raise Forbidden(
                f"Only the owner of {kb.name!r} and admins may delete it, share it or change "
                "its settings."
            )
        return kb

    def create_kb(
        self, name: str, description: str = "", settings: KnowledgeSettings = NO_SETTINGS
    ) -> KnowledgeBase:
        if not self.access.can_create():
            raise Forbidden(
                "This API key is limited to some KBs or to reading; it cannot make KBs."
            )
        kb = self.app.create_kb(name, description, self.access.user_id, settings)
        self.access = self.access.including(kb)  # the caller's searches may use it at once
        return kb

    @contextmanager
    def target_kb(self, name: str | None, default: str) -> Iterator[KnowledgeBase]:
        """Where fetched pages go: the named KB (made, owned by the caller, if it does not
        exist) or the caller's own default KB (``default``, suffixed with the user's name),
        looked up among the caller's own KBs only: a KB of that name that someone else owns
        and shared (to read what lands in it, or to make it fail) is never a default.
        A KB made here and still empty when the block fails is removed again."""
        if name:
            existing = self.find_kb(name)
        else:
            user, owner = self.access.user, self.access.user_id
            name = default if user is None else f"{default}-{user.name}"
            own_default = name
            existing = self.app.catalog.resolve_kb(
                name, lambda kb: kb.owner_id == owner and kb.name == own_default, owner
            )
        kb = self.writable_kb(existing.id) if existing else self.create_kb(name)
        try:
            yield kb
        except BaseException:
            if existing is None and not self.app.catalog.files_in_kb(kb.id):
                self.app.delete_kb(kb.id)
            raise

    # --- files: each as the caller's own link names it ---------------------------------------
    def files(self, kb: str | None = None) -> list[FileRecord]:
        if kb is not None:
            return self.files_in([self.kb(kb).id])
        return self.files_in(self.access.readable)

    def files_in(self, kb_ids: Collection[str] | None) -> list[FileRecord]:
        """Files of these KBs (None: all) that the caller may read, as the caller sees them."""
        if kb_ids is not None:
            kb_ids = frozenset(k for k in kb_ids if self.access.can_read(k))
        elif self.access.readable is not None:
            kb_ids = self.access.readable
        links = self.app.catalog.links(kb_ids=kb_ids)
        records = {r.id: r for r in self.app.catalog.files_by_id({k.file_id for k in links})}
        seen = self._as_seen(records, links)
        return sorted(seen.values(), key=lambda r: r.created_at)

    def file(self, file_id: str, in_kb: str | None = None) -> FileRecord:
        """The file as the caller sees it (``in_kb``: under its name in that KB)."""
        record = self.app.catalog.get_file(file_id)
        links = self._readable_links(file_id) if record is not None else []
        if in_kb is not None:
            links = [k for k in links if k.kb_id == in_kb] or links
        if record is None or not links:
            raise FileNotFound(
                f"No file {file_id!r} that you may read; GET /api/v1/files lists them."
            )
        return self._as_seen({record.id: record}, links)[record.id]

    def readable_file(self, file_id: str) -> FileRecord | None:
        try:
            return self.file(file_id)
        except FileNotFound:
            return None

    def removable_links(self, file_id: str) -> list[FileLink]:
        """The links the caller removes by deleting the file: those in KBs they may read,
        all of which they must be able to change. Links elsewhere stay, unmentioned."""
        links = self._readable_links(file_id)
        if not links:
            self.file(file_id)  # raises the same 404 as any other unreadable file
        for link in links:
            kb = self.app.catalog.resolve_kb(link.kb_id)
            if kb is not None and not self.access.can_write(kb):
                raise Forbidden(
                    f"File {file_id!r} is also in knowledge base {kb.name!r}, which you may "
                    "read but not change; remove it from yours with DELETE "
                    "/api/v1/knowledge/{kb}/files/{file_id}."
                )
        return links

    def file_text(self, file_id: str) -> str:
        return self.app.storage.text(self.file(file_id).id) or ""

    def file_text_and_sections(self, file_id: str) -> tuple[str, list[Section]]:
        """The extracted text and where its pages and headings lie (one access check)."""
        record_id = self.file(file_id).id
        return self.app.storage.text(record_id) or "", self.app.storage.sections(record_id)

    def file_original(self, file_id: str) -> tuple[FileRecord, bytes]:
        record = self.file(file_id)
        return record, self.app.storage.original(record.id, record.text_is_original) or b""

    def file_page_image(self, file_id: str, page: int, width: int) -> bytes:
        """Page ``page`` of a PDF you may read, as a PNG ``width`` pixels wide."""
        record, data = self.file_original(file_id)
        if record.mime_type != "application/pdf" or not data:
            raise InvalidInput(f"{record.name} is not a PDF: only PDF pages are shown as images.")
        return self.app.renders.render(data, page, width, self.access.user_id)

    def _readable_links(self, file_id: str) -> list[FileLink]:
        links = self.app.catalog.links(file_ids=[file_id])
        return [k for k in links if self.access.can_read(k.kb_id)]

    def _as_seen(
        self, records: dict[str, FileRecord], links: list[FileLink]
    ) -> dict[str, FileRecord]:
        """Each file under the name, time, source and URL of its link that the caller sees:
        their own upload if any, else the oldest readable one. Another tenant's never shows."""
        mine = self.access.user_id
        chosen: dict[str, FileLink] = {}
        for link in links:  # oldest first
            held = chosen.get(link.file_id)
            if held is None or (link.added_by == mine and held.added_by != mine):
                chosen[link.file_id] = link
        return {
            file_id: replace(
                records[file_id],
                name=link.name or records[file_id].name,
                created_at=link.added_at,
                # A link knows how it came in ("" only for links older than that).
                source=link.source or records[file_id].source,
                url=link.url if link.source else records[file_id].url,
            )
            for file_id, link in chosen.items()
            if file_id in records
        }

    # --- chunks ------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        where: ChunkFilter,
        mode: SearchMode | None = None,
        k: int | None = None,
        trace: RetrievalTrace | None = None,
        threshold: float | None = None,
    ) -> list[ScoredChunk]:
        """``where`` narrowed to the readable KBs, inside the store query; the query's vector
        from the caller's own cache."""
        with self.tenant():
            where = self.access.where(where)
            return self.app.search_where(query, where, mode, k, trace, threshold)

    def tenant(self) -> AbstractContextManager[None]:
        """Embeddings made in this block are cached for the caller alone."""
        return embedding_tenant(self.access.user_id)

    def collection_filter(self, names: Sequence[str]) -> ChunkFilter:
        return ChunkFilter(kb_ids=tuple(self.searched_kb(name).id for name in names))

    def searched_kb(self, name_or_id: str) -> KnowledgeBase:
        """The KB a search names, from memory while the database is unchanged (no file
        count: a search needs its id and name)."""
        access = self.access
        kb = self.app.catalog.resolve_kb(
            name_or_id, access.can_read, access.user_id, count_files=False
        )
        return kb or self.kb(name_or_id)  # self.kb raises the usual not-found error
