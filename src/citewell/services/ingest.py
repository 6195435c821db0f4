"""Files, folders and web pages from where the server runs into a knowledge base: what
``citewell ingest`` does, as the local operator. Paths are read on this machine, so the
operations are the operator's (admins); each checks that and records what it added."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from citewell.catalog import KnowledgeBase
from citewell.engine.scoped import Scoped
from citewell.ingest.chunk_files import read_chunk_file
from citewell.ingest.imports import ChunkImport, ImportReport
from citewell.ingest.types import IngestEstimate, ProgressCallback
from citewell.jobs import Job
from citewell.services.accounts import require_admin
from citewell.sources import SourceItem
from citewell.types import IngestReport


@dataclass
class BatchState:
    """A queued batch as it stands: jobs by state, the failed ones' errors, and the chunks
    of each indexed job's file."""

    counts: dict[str, int]
    errors: list[str]
    chunks: dict[str, int] = field(default_factory=dict)


class IngestService:
    def __init__(self, view: Scoped) -> None:
        require_admin(view.access)
        self.view, self.app = view, view.app

    @property
    def enriches(self) -> bool:
        """Whether ingesting asks the LLM for contexts or summaries (settings in force)."""
        return self.app.enricher.active

    def items(self, targets: Sequence[str], source: str = "") -> list[SourceItem]:
        return self.app.items(list(targets), source)[0]

    def estimate(self, items: Sequence[SourceItem], kb: str) -> IngestEstimate:
        """What ingesting would take into ``kb`` (its own chunking, if it exists)."""
        found = self.app.catalog.find_kb(kb)
        return self.app.estimate(list(items), kb=found.id if found else None)

    def ingest(
        self, targets: Sequence[str], kb: str, progress: ProgressCallback | None, source: str = ""
    ) -> IngestReport:
        """Into ``kb`` (made if missing), now, in this process."""
        found = self._kb(kb)
        report = self.app.ingest(list(targets), found.id, progress, source)
        self.view.record("kb.ingest", "knowledge_base", found.id, files=report.files_indexed)
        return report

    def queue(self, items: Sequence[SourceItem], kb: str) -> list[Job]:
        """As one batch of durable jobs into ``kb`` (made if missing)."""
        found = self._kb(kb)
        jobs = self.app.enqueue(found.id, list(items))
        if jobs:
            batch = jobs[0].batch_id
            self.view.record("file.batch", "knowledge_base", found.id, files=len(jobs), batch=batch)
        return jobs

    def import_chunks(
        self, path: Path, kb: str, progress: Callable[[ImportReport], None] | None = None
    ) -> ImportReport:
        """Chunks with their vectors from a Parquet or JSON Lines file into ``kb`` (made if
        missing): nothing parsed or embedded (ingest.imports)."""
        found = self._kb(kb)
        files = read_chunk_file(path)
        report = ChunkImport(self.app.ingestor, found, self.view.access.user_id).run(
            files, progress
        )
        self.view.record("kb.import", "knowledge_base", found.id, files=report.files_imported,
                         chunks=report.chunks_stored)  # fmt: skip
        return report

    def batch(self, batch_id: str, known: dict[str, int] | None = None) -> BatchState:
        """``known``: chunks of jobs already counted; the indexed jobs are listed only when
        more are indexed than that (a progress bar asks four times a second)."""
        jobs = self.app.jobs
        counts: dict[str, int] = jobs.counts(batch_id)
        failed = jobs.find(batch_id=batch_id, state="failed") if counts.get("failed") else []
        chunks = dict(known or {})
        if counts.get("indexed", 0) > len(chunks):
            for job in jobs.find(batch_id=batch_id, state="indexed"):
                if job.id not in chunks:
                    record = self.view.readable_file(job.file_id)
                    chunks[job.id] = record.chunk_count if record else 0
        return BatchState(counts, [f"{j.name}: {j.last_error}" for j in failed], chunks)

    def _kb(self, kb: str) -> KnowledgeBase:
        """The operator's own KB of this name (made if missing), or the KB of this id: the
        CLI never writes into a user's KB because it bears the name."""
        return self.app.catalog.ensure_kb(kb)
