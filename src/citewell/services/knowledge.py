"""Knowledge bases and the files in them, as one caller sees them: each operation checks
the caller's access itself (read, write, or manage: owner and admins) before it acts, and
records each change in the audit trail, whichever adapter asked (HTTP, CLI, MCP)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from citewell.catalog import FileRecord, KnowledgeBase
from citewell.catalog.folders import clean_folder, join
from citewell.catalog.kb_settings import NO_SETTINGS
from citewell.catalog.labels import RechunkStatus
from citewell.config import EnrichmentSection
from citewell.engine.scoped import Scoped
from citewell.errors import InvalidInput, PayloadTooLarge
from citewell.ingest.types import IngestEstimate
from citewell.jobs import Job
from citewell.sources import SourceItem
from citewell.types import IngestReport

__all__ = ["FileRecord", "KnowledgeBase", "KnowledgeService", "RechunkStatus", "Uploaded"]


@dataclass(frozen=True)
class Uploaded:
    """A file as the uploader sees it after an upload. ``known``: the caller could read
    identical bytes before; only then is it told they were linked, not embedded again
    (else the answer would reveal another tenant's file)."""

    kb_id: str
    record: FileRecord
    report: IngestReport
    known: bool


class KnowledgeService:
    def __init__(self, view: Scoped) -> None:
        self.view = view
        self.app = view.app

    @property
    def max_upload_bytes(self) -> int:
        """Largest file an upload may carry (read this far, then refused with 413)."""
        return self.app.settings.server.max_upload_bytes

    @property
    def enrichment(self) -> EnrichmentSection:
        """Whether files get LLM-written contexts and summaries now (settings in force)."""
        return self.app.settings.enrichment

    # --- knowledge bases ---------------------------------------------------------------
    def create(
        self, name: str, description: str = "", changes: Mapping[str, Any] | None = None
    ) -> KnowledgeBase:
        """A new KB owned by the caller; ``changes``: its own settings."""
        settings = NO_SETTINGS.updated(dict(changes)) if changes else NO_SETTINGS
        created = self.view.create_kb(name, description, settings)
        self.view.record("kb.create", "knowledge_base", created.id, name=created.name)
        return created

    def kbs(self) -> list[KnowledgeBase]:
        return self.view.kbs()

    def get(self, kb: str) -> tuple[KnowledgeBase, list[FileRecord], RechunkStatus | None]:
        """The KB, its files and any re-chunking under way."""
        found = self.view.kb(kb)
        return found, self.view.files(found.id), self.app.rechunker.status(found.id)

    def update(
        self,
        kb: str,
        name: str | None,
        description: str | None,
        changes: Mapping[str, Any] | None,
    ) -> tuple[KnowledgeBase, RechunkStatus | None]:
        """Rename or describe (write access); change its own settings (owner or admin)."""
        found = self.view.writable_kb(kb)
        settings = None
        if changes is not None:
            found = self.view.managed_kb(found.id)
            settings = found.settings.updated(dict(changes))
        updated = self.app.update_kb(found.id, name, description, settings)
        detail = {"settings": sorted(changes)} if changes is not None else {}
        self.view.record("kb.update", "knowledge_base", updated.id, name=updated.name, **detail)
        return updated, self.app.rechunker.status(found.id)

    def delete(self, kb: str) -> KnowledgeBase:
        """The KB and every chunk, vector and file no other KB uses (owner or admin)."""
        found = self.view.managed_kb(kb)
        self.app.delete_kb(found.id)
        self.view.record("kb.delete", "knowledge_base", found.id, name=found.name)
        return found

    # --- files -------------------------------------------------------------------------
    def upload(self, kb: str, name: str, data: bytes, folder: str = "") -> Uploaded:
        """``folder``: put it there under its name (a file of that name there is
        replaced); without, same-named uploads are all kept."""
        found = self.view.writable_kb(kb)
        path = join(clean_folder(folder), name) if folder else ""
        stored = self.app.stored_file(found.id, data)
        known = stored is not None and self.view.readable_file(stored.id) is not None
        user = self.view.access.user_id
        record, report = self.app.upload(found.id, name, data, user, path)
        self.view.record("file.upload", "file", record.id, name=name, kb=found.id)
        return Uploaded(found.id, self.view.file(record.id, in_kb=found.id), report, known)

    def add_text(self, kb: str, name: str, content: str) -> Uploaded:
        limit = self.app.settings.extraction.max_document_chars
        if len(content) > limit:
            raise PayloadTooLarge(
                f"The text has {len(content):,} characters; at most {limit:,} (max_document_chars)."
            )
        return self.upload(kb, name, content.encode("utf-8"))

    def writable(self, kb: str) -> KnowledgeBase:
        """The KB if the caller may add to it: adapters ask before reading uploads' bodies
        (each operation checks again)."""
        return self.view.writable_kb(kb)

    def check_batch(self, count: int) -> None:
        """A 400 for a batch of no files or more than max_batch_files, before any is read."""
        self._check_count(
            count,
            "{count} files in one request; at most {most} "
            "(max_batch_files). Send them in several batches.",
        )

    def check_estimate(self, count: int) -> None:
        self._check_count(count, "Send 1 to {most} files (max_batch_files).")

    def _check_count(self, count: int, message: str) -> None:
        most = self.app.settings.jobs.max_batch_files
        if not count or count > most:
            raise InvalidInput(message.format(count=count, most=most))

    def enqueue(self, kb: str, entries: Sequence[tuple[str, bytes]], folder: str = "") -> list[Job]:
        """Queue files (name, bytes) as one batch of jobs (``folder``: into that folder)."""
        self.check_batch(len(entries))
        found = self.view.writable_kb(kb)
        user = self.view.access.user_id
        jobs = self.app.enqueue_uploads(found.id, list(entries), user, clean_folder(folder))
        self._record_queued(found.id, jobs)
        return jobs

    def queue(self, kb: str, name: str, data: bytes, folder: str = "") -> Job:
        """One file queued (an upload that does not wait for its ingest)."""
        (job,) = self.enqueue(kb, [(name, data)], folder)
        return job

    def _record_queued(self, kb_id: str, jobs: Sequence[Job]) -> None:
        if len(jobs) == 1:
            job = jobs[0]
            self.view.record("file.queue", "knowledge_base", kb_id, name=job.name, job=job.id)
            return
        batch = jobs[0].batch_id
        self.view.record("file.batch", "knowledge_base", kb_id, files=len(jobs), batch=batch)

    def estimate(self, kb: str, entries: Sequence[tuple[str, bytes]]) -> IngestEstimate:
        """What ingesting these files would take; nothing is stored."""
        self.check_estimate(len(entries))
        found = self.view.writable_kb(kb)
        items = [_item(name, data) for name, data in entries]
        return self.app.estimate(items, False, found.id)

    def add_existing(
        self, kb: str, file_id: str
    ) -> tuple[KnowledgeBase, FileRecord, list[FileRecord]]:
        """A stored file the caller may read, added to this KB too (no parsing, no embedding).
        The KB afterwards, the file, and the KB's files."""
        if not file_id.isalnum():
            raise InvalidInput("file_id must be a file id from GET /api/v1/files.")
        found = self.view.writable_kb(kb)
        record = self.view.file(file_id)
        self.app.add_file(found.id, record.id, record.name, self.view.access.user_id, seen=record)
        self.view.record("file.add", "file", record.id, kb=found.id)
        return self.view.kb(found.id), record, self.view.files(found.id)

    def remove_file(self, kb: str, file_id: str) -> KnowledgeBase:
        """Take the file out of the KB; it is deleted once no KB holds it."""
        found = self.view.writable_kb(kb)
        self.app.remove_file(found.id, file_id)
        self.view.record("file.remove", "file", file_id, kb=found.id)
        return found

    def delete_file(self, file_id: str) -> FileRecord:
        """The file out of every KB the caller may read (they must be able to change each);
        its bytes, chunks and vectors go once no KB at all holds it. Returns it as the caller
        named it."""
        record = self.view.file(file_id)
        for link in self.view.removable_links(file_id):
            self.app.remove_file(link.kb_id, record.id)
        self.view.record("file.delete", "file", record.id, name=record.name)
        return record


def _item(name: str, data: bytes) -> SourceItem:
    return SourceItem(key=name, name=name, read=lambda: data)
