"""Citewell as one caller sees it. The HTTP API reaches knowledge bases, files and chunks only
through here: KBs the caller may not read do not exist for it (404, like a KB that does not
exist), and every chunk search carries the caller's readable KBs in the store's own filter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citewell.auth.access import Access
from citewell.catalog import FileRecord, KnowledgeBase
from citewell.errors import FileNotFound, Forbidden, KnowledgeBaseNotFound
from citewell.pipeline.core import Citewell
from citewell.retrieval import RetrievalTrace
from citewell.types import ChunkFilter, ScoredChunk, SearchMode


@dataclass
class Scoped:
    app: Citewell
    access: Access

    # --- knowledge bases ------------------------------------------------------------------
    def kbs(self) -> list[KnowledgeBase]:
        return self.app.catalog.list_kbs(self.access.readable)

    def find_kb(self, name_or_id: str) -> KnowledgeBase | None:
        kb = self.app.catalog.find_kb(name_or_id)
        return kb if kb is not None and self.access.can_read(kb) else None

    def kb(self, name_or_id: str) -> KnowledgeBase:
        kb = self.find_kb(name_or_id)
        if kb is None:
            raise KnowledgeBaseNotFound(
                f"No knowledge base {name_or_id!r} that you may read; GET /api/v1/knowledge "
                "lists yours."
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
            raise Forbidden(f"Only the owner of {kb.name!r} and admins may delete or share it.")
        return kb

    def create_kb(self, name: str, description: str = "") -> KnowledgeBase:
        if not self.access.can_create():
            raise Forbidden(
                "This API key is limited to some KBs or to reading; it cannot make KBs."
            )
        kb = self.app.catalog.create_kb(name, description, owner_id=self.access.user_id)
        self.access = self.access.including(kb)  # the caller's searches may use it at once
        return kb

    def target_kb(self, name: str | None, default: str) -> KnowledgeBase:
        """Where fetched pages go: the named KB (made, owned by the caller, if it does not
        exist) or the caller's own default KB (``default``, suffixed with the user's name)."""
        if not name:
            user = self.access.user
            name = default if user is None else f"{default}-{user.name}"
        existing = self.app.catalog.find_kb(name)
        if existing is None:
            return self.create_kb(name)
        return self.writable_kb(existing.id)

    # --- files -------------------------------------------------------------------------------
    def files(self, kb: str | None = None) -> list[FileRecord]:
        if kb is not None:
            return self.app.files(self.kb(kb).id)
        if self.access.readable is None:
            return self.app.files()
        return self.app.catalog.files_in_kbs(self.access.readable)

    def file(self, file_id: str) -> FileRecord:
        record = self.app.catalog.get_file(file_id)
        hidden = self.access.readable is not None and not self._readable_kbs(file_id)
        if record is None or hidden:
            raise FileNotFound(
                f"No file {file_id!r} that you may read; GET /api/v1/files lists them."
            )
        return record

    def deletable_file(self, file_id: str) -> FileRecord:
        """A file the caller may delete everywhere: it may change every KB holding it."""
        record = self.file(file_id)
        for kb_id in self.app.catalog.kbs_of_file(record.id):
            kb = self.app.catalog.find_kb(kb_id)
            if kb is not None and not self.access.can_write(kb):
                raise Forbidden(
                    f"File {file_id!r} is also in knowledge base(s) you may not change; remove "
                    "it from yours with DELETE /api/v1/knowledge/{kb}/files/{file_id}."
                )
        return record

    def file_text(self, file_id: str) -> str:
        return self.app.storage.text(self.file(file_id).id) or ""

    def file_original(self, file_id: str) -> tuple[FileRecord, bytes]:
        record = self.file(file_id)
        return record, self.app.storage.original(record.id) or b""

    def _readable_kbs(self, file_id: str) -> list[str]:
        return [k for k in self.app.catalog.kbs_of_file(file_id) if self.access.can_read(k)]

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
        """``where`` narrowed to the readable KBs, inside the store query."""
        return self.app.search_where(query, self.access.where(where), mode, k, trace, threshold)

    def collection_filter(self, names: Sequence[str]) -> ChunkFilter:
        return ChunkFilter(kb_ids=tuple(self.kb(name).id for name in names))
