"""Re-chunking a knowledge base whose chunking changed, through the job queue: the next
chunk set is built beside the one searches read, then swapped in (see ``chunk_sets``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from citewell.catalog.labels import LABELS_TTL, KbChunkSets, RechunkStatus
from citewell.errors import CitewellError
from citewell.ingest.chunk_sets import ChunkSets
from citewell.ingest.ingestor import Ingestor
from citewell.ingest.types import ChunkTarget
from citewell.jobs import Job, JobStore
from citewell.jobs.states import RUNNING
from citewell.types import ChunkFilter

log = logging.getLogger(__name__)


class Rechunker:
    """Re-chunks knowledge bases through the job queue (operation ``rechunk``, one job per
    file, the key is the file id) and swaps each KB's set when its jobs are done."""

    def __init__(self, sets: ChunkSets, ingestor: Ingestor, jobs: JobStore) -> None:
        self.sets = sets
        self.labels = sets.labels
        self.ingestor = ingestor
        self.jobs = jobs

    def start(self, kb_id: str) -> str | None:
        """After the KB's chunking changed: build its next set. Returns the job batch, or
        None when there is nothing to build (an empty KB swaps at once)."""
        with self.ingestor.lock:
            sets = self.labels.of(kb_id)
            self._retire(sets)
            if sets.pending:  # a re-chunk still running is superseded
                self.jobs.cancel_batch(sets.batch)
                self._drop(kb_id, sets.pending)
                self.labels.abandon(kb_id)
            own = bool(self.sets.catalog.get_kb(kb_id).settings.chunking)
            label = self.labels.of(kb_id).next_label(own)
            if label == sets.label:
                return None  # back on the shared set it still reads
            records = {r.id: r for r in self.sets.catalog.files_in_kb(kb_id).values()}
            batch = JobStore.new_id()
            self.labels.begin(kb_id, label, batch)
            files = [(JobStore.new_id(), r.name, r.id) for r in records.values()]
            self.jobs.enqueue(kb_id, files, operation="rechunk", batch_id=batch)
        if not records:
            self.finish(kb_id, wait=False)  # nothing stored under either label
        return batch

    def status(self, kb_id: str) -> RechunkStatus | None:
        """The KB's re-chunk while it runs (None when its searches read its only set)."""
        sets = self.labels.of(kb_id)
        if not sets.pending:
            return None
        counts = self.jobs.counts(sets.batch)
        done, failed = counts.get("indexed", 0), counts.get("failed", 0)
        return RechunkStatus(sets.batch, sum(counts.values()), done, failed)

    def rechunk(self, kb_id: str, group: Sequence[Job]) -> None:
        """Build the pending set of the group's files (the runner's claimed jobs)."""
        if self.sets.catalog.find_kb(kb_id) is None:  # deleted since
            for job in group:
                self.jobs.cancel(job.id)
            return
        with self.ingestor.lock:
            sets = self.labels.of(kb_id)
            embedder = self.ingestor.embedder
            target: ChunkTarget | None = None  # built once for the group, when first needed
            for job in group:
                if job.batch_id != sets.batch or not sets.pending:
                    self.jobs.cancel(job.id)  # superseded by a later change
                    continue
                record = self.sets.catalog.get_file(job.key)
                try:
                    if record is not None and kb_id in self.sets.catalog.kbs_of_file(record.id):
                        target = target or self.sets.target(kb_id, sets.pending, embedder)
                        self.ingestor.add_set(record, kb_id, target)
                except CitewellError as exc:  # its stored text is gone, the LLM is down, ...
                    self.jobs.fail(job.id, exc.message, exc.code, None, job.claim)
                    continue
                self.jobs.succeed(job.id, job.key, job.claim)
        self.finish(kb_id)

    def finish(self, kb_id: str, wait: bool = True) -> bool:
        """Swap the KB to its new set once no job of the re-chunk is left; True if so."""
        sets = self.labels.of(kb_id)
        if not sets.pending:
            return False
        counts = self.jobs.counts(sets.batch)
        if any(counts.get(state, 0) for state in ("queued", *RUNNING)):
            return False
        self.labels.swap(kb_id)
        log.info("knowledge base %s now reads chunk set %s", kb_id, sets.pending)
        if wait:
            time.sleep(LABELS_TTL + 0.5)  # other processes may read the old label that long
        with self.ingestor.lock:
            self._retire(self.labels.of(kb_id))
        return True

    def retire_all(self) -> None:
        """Delete the sets that swaps replaced (after a crash between swap and delete)."""
        for sets in self.labels.special().values():
            if sets.retired:
                with self.ingestor.lock:
                    self._retire(self.labels.of(sets.kb_id))

    def _retire(self, sets: KbChunkSets) -> None:
        if sets.retired and sets.retired not in (sets.label, sets.pending):
            self._drop(sets.kb_id, sets.retired)
        if sets.retired:
            self.labels.retired_gone(sets.kb_id)

    def _drop(self, kb_id: str, label: str) -> None:
        """Delete one of the KB's sets (the shared one: only the KB's share of it)."""
        store = self.ingestor.writer
        if label != kb_id:
            store.delete(ChunkFilter(kb_ids=(label,)))
            return
        for record in {r.id for r in self.sets.catalog.files_in_kb(kb_id).values()}:
            store.unlink(record, label)
