"""`citewell check`: where the metadata database, the chunk store and the stored files
disagree, and (with repair) making them agree again.

- chunks (or sentence pairs) of files the catalog does not know (orphans) → deleted;
- files whose chunks are missing or fewer than recorded (or, in a KB with its own chunking,
  whose chunk set there is missing) → re-indexed from the stored original, every chunk set
  anew (deleted when the original is gone too);
- stored originals and texts of no known file, written over an hour ago → deleted (younger
  ones may be an ingest in flight);
- known files whose stored text is missing (a file store restored from an older copy, a
  bucket's objects deleted) → the text made again from the original; a missing original
  is reported (only a backup or a new upload brings it back);
- files in no knowledge base → deleted, as removing a file from its last KB does;
- jobs that have been running far longer than any step may take (their worker died) → queued
  again;
- staged uploads whose job is gone or finished for good → deleted;
- a vector index whose recall@50 against exact search (sampled) is below RECALL_FLOOR →
  trained anew. The index layout and recall are reported either way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from citewell.catalog import Catalog
from citewell.catalog.storage import FileStorage
from citewell.ingest.ingestor import Ingestor
from citewell.jobs import RUNNING, JobStore
from citewell.jobs.staged import stale_staged
from citewell.stores.base import (
    ChunkStore,
    IndexHealth,
    chunks_per_file,
    index_health,
    rebuild_vector_index,
)
from citewell.types import ChunkFilter

# Sampled recall is an estimate; the index policy keeps it near 0.99 (docs/benchmarks/journal.md).
RECALL_FLOOR = 0.9
# Stored files of no known file written this recently may belong to an ingest in flight
# (its blobs are written before its catalog row); older ones are what a killed worker left.
STORING_SECONDS = 3600


@dataclass
class CheckReport:
    orphan_chunks: dict[str, int] = field(default_factory=dict)  # file id → chunks
    missing_chunks: dict[str, tuple[int, int]] = field(default_factory=dict)  # (recorded, found)
    orphan_stored: list[str] = field(default_factory=list)
    missing_stored: dict[str, list[str]] = field(default_factory=dict)  # id → missing kinds
    files_in_no_kb: list[str] = field(default_factory=list)
    stuck_jobs: list[str] = field(default_factory=list)
    orphan_staged: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    index: IndexHealth | None = None  # from stores that can report it

    @property
    def low_recall(self) -> bool:
        recall = self.index.recall_at_50 if self.index else None
        return recall is not None and recall < RECALL_FLOOR

    @property
    def indexes_behind(self) -> bool:
        """Rows outside an index they should be in (a write stopped before its upkeep)."""
        return self.index is not None and self.index.rows_behind > 0

    @property
    def problems(self) -> int:
        return (
            int(self.low_recall)
            + int(self.indexes_behind)
            + len(self.orphan_chunks)
            + len(self.missing_chunks)
            + len(self.orphan_stored)
            + len(self.missing_stored)
            + len(self.files_in_no_kb)
            + len(self.stuck_jobs)
            + len(self.orphan_staged)
        )


class ConsistencyCheck:
    def __init__(
        self,
        catalog: Catalog,
        store: ChunkStore,
        storage: FileStorage,
        ingestor: Ingestor,
        jobs: JobStore,
        stuck_after: float,
        recall_samples: int = 20,
    ) -> None:
        self.catalog = catalog
        self.store = store
        self.storage = storage
        self.ingestor = ingestor
        self.jobs = jobs
        self.stuck_after = stuck_after  # seconds a job may sit in one running state
        self.recall_samples = recall_samples

    def run(self, repair: bool = False) -> CheckReport:
        with self.ingestor.lock:  # no ingest may change things while they are compared
            report = self._compare()
            if repair:
                self._repair(report)
        return report

    def _compare(self) -> CheckReport:
        report = CheckReport()
        files = {f.id: f for f in self.catalog.list_files()}
        pairs, counts = self.ingestor.writer.sentences, chunks_per_file(self.store)
        for file_id in sorted((set(counts) | pairs.file_ids()) - set(files)):
            where = ChunkFilter(file_ids=(file_id,))
            report.orphan_chunks[file_id] = counts.get(file_id, 0) + pairs.count(where)
        special = self.ingestor.sets.labels.special()
        kbs_of = self.catalog.kbs_of_files()
        for record in files.values():
            kb_ids = kbs_of.get(record.id, [])
            if not kb_ids:
                report.files_in_no_kb.append(record.id)
            labels = {special[k].label if k in special else k for k in kb_ids}
            if all(label in kb_ids for label in labels):  # only the shared set
                found = counts.get(record.id, 0)
                if found < record.chunk_count:
                    report.missing_chunks[record.id] = (record.chunk_count, found)
                continue
            for label in sorted(labels):  # sets of other chunkings: each must be there
                where = ChunkFilter(kb_ids=(label,), file_ids=(record.id,))
                if record.chunk_count and not self.store.count(where):
                    report.missing_chunks[record.id] = (record.chunk_count, 0)
        stored = self.storage.stored()
        settled = time.time() - STORING_SECONDS
        report.orphan_stored = sorted(
            file_id
            for file_id, (kinds, written) in stored.items()
            if file_id not in files and kinds & {"original", "txt"} and written < settled
        )
        for file_id, record in files.items():
            kinds, _written = stored.get(file_id, (set(), 0.0))
            if record.text_is_original and "txt" in kinds:
                kinds = kinds | {"original"}  # its text is its original (FileStorage.put)
            missing = [k for k in ("original", "txt") if k not in kinds]
            if missing:
                report.missing_stored[file_id] = missing
        self._compare_jobs(report)
        report.index = index_health(self.store, self.recall_samples)
        return report

    def _compare_jobs(self, report: CheckReport) -> None:
        jobs = {job.id: job for job in self.jobs.find()}
        cutoff = time.time() - self.stuck_after
        report.stuck_jobs = [
            j.id for j in jobs.values() if j.state in RUNNING and j.updated_at < cutoff
        ]
        report.orphan_staged = stale_staged(self.jobs, self.storage)

    def _repair(self, report: CheckReport) -> None:
        for file_id in report.orphan_chunks:
            self.ingestor.writer.delete(ChunkFilter(file_ids=(file_id,)))
            report.repairs.append(f"deleted the orphan chunks of {file_id}")
        for file_id in report.orphan_stored:
            self.storage.delete(file_id)
            report.repairs.append(f"deleted the stored files of unknown file {file_id}")
        skipped = {**report.missing_chunks, **dict.fromkeys(report.files_in_no_kb)}
        for file_id, missing in report.missing_stored.items():  # a lost original stays lost
            if "original" not in missing and file_id not in skipped:
                report.repairs.append(self._reindex(file_id))
        for file_id in report.files_in_no_kb:
            self.ingestor.delete_file(file_id)
            report.repairs.append(f"deleted {file_id}, which no knowledge base holds")
        for job_id in report.stuck_jobs:
            self.jobs.requeue(job_id)
            report.repairs.append(f"queued stuck job {job_id} again")
        for job_id in report.orphan_staged:
            self.storage.unstage(job_id)
            report.repairs.append(f"deleted the staged upload of finished job {job_id}")
        for file_id in report.missing_chunks:
            if file_id not in report.files_in_no_kb:
                report.repairs.append(self._reindex(file_id))
        if report.low_recall and rebuild_vector_index(self.store):
            report.repairs.append("trained the vector index anew")
        if report.repairs or report.indexes_behind:
            self.ingestor.writer.optimize()
        if report.indexes_behind and report.index is not None:
            report.repairs.append(self._taken_in(report.index.rows_behind))

    def _taken_in(self, behind: int) -> str:
        after = index_health(self.store, 0)
        left = after.rows_behind if after is not None else 0
        done = f"took {behind - left:,} rows into the chunk indexes they lacked"
        # A vector training that failed is tried again a while later, not at once.
        return done + (f"; {left:,} are left for the next training" if left else "")

    def _reindex(self, file_id: str) -> str:
        record = self.catalog.get_file(file_id)
        data = None if record is None else self.storage.original(file_id, record.text_is_original)
        if record is None or data is None:
            self.ingestor.delete_file(file_id)
            return f"deleted {file_id}: its chunks and its stored original are gone"
        count = self.ingestor.reindex(record, data)
        return f"re-indexed {file_id} ({record.name}) from its stored original: {count} chunks"
