"""Chunk sets: a knowledge base with its own chunking reads chunks of its own.

Files are stored once per distinct bytes. KBs on the server's chunking share one chunk set
per file (its chunks carry those KBs' ids). A KB with its own chunking (``settings.chunking``)
gets a set of its own per file, labelled ``{kb id}~{n}`` (``catalog.labels``). The store
only knows labels: searches translate KB ids to the labels in force just before the store
query, and the chunks' labels back to KB ids after it (``where``, ``visible``).

Changing a KB's chunking re-chunks it through the job queue (``Rechunker``): one job per
file builds the next set from the stored text (no parsing; unchanged texts are embedded
from the cache) while searches keep reading the current one; when every job is done one
catalog update swaps the label, and the replaced set is deleted once no process can still
be reading it (``LABELS_TTL``). A file added meanwhile gets both sets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from citewell.catalog import Catalog
from citewell.catalog.labels import (
    LABELS_TTL,
    ChunkLabels,
    KbChunkSets,
    RechunkStatus,
    kb_of_label,
)
from citewell.config import Settings
from citewell.embedders import Embedder
from citewell.enrich import Enricher
from citewell.errors import CitewellError
from citewell.jobs import Job, JobStore
from citewell.jobs.store import RUNNING
from citewell.splitters import Splitter
from citewell.types import ChunkFilter, ScoredChunk

if TYPE_CHECKING:
    from citewell.pipeline.ingest import Ingestor
    from citewell.pipeline.tuning import LiveSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkTarget:
    """One chunk set a file gets in a KB: its label and how its chunks are made."""

    label: str
    shared: bool  # the server's chunking, shared by every KB on it
    splitter: Splitter
    enricher: Enricher
    bm25_enriched: bool  # file name and title indexed with each chunk
    sentences: bool = False  # its chunks' sentence pairs are embedded too


class ChunkSets:
    """The KBs' chunk sets as ingestion and search need them."""

    def __init__(
        self,
        catalog: Catalog,
        live: LiveSettings,
        enricher: Callable[[Settings], Enricher],
    ) -> None:
        self.catalog = catalog
        self.labels = ChunkLabels(catalog.engine)
        self.live = live
        self._enricher = enricher

    # --- writing ------------------------------------------------------------------------
    def targets(self, kb_id: str, embedder: Embedder) -> tuple[ChunkTarget, ...]:
        """The sets a file added to ``kb_id`` now goes into (two while it is re-chunked)."""
        sets = self.labels.of(kb_id)
        return tuple(self.target(kb_id, label, embedder) for label in sets.writing)

    def target(self, kb_id: str, label: str, embedder: Embedder) -> ChunkTarget:
        shared = label == kb_id
        own: dict[str, Any] = {}
        if not shared:
            own = self.catalog.get_kb(kb_id).settings.chunking_map
        settings = self.live.chunking(own)
        return ChunkTarget(
            label,
            shared,
            self.live.splitter_for(embedder, settings),
            self._enricher(settings),
            settings.bm25_enriched_texts,
            settings.sentence_vectors,
        )

    def shared_peer(self, file_id: str, kb_id: str) -> str | None:
        """Another KB whose searches read the file's shared set (it exists, then)."""
        for other in self.catalog.kbs_of_file(file_id):
            if other != kb_id and self.labels.of(other).shared:
                return other
        return None

    # --- reading ------------------------------------------------------------------------
    def where(self, where: ChunkFilter) -> ChunkFilter:
        """``where`` (KB ids) as the store's filter (the labels searches read now)."""
        special = self.labels.special()
        if not special:
            return where  # every KB reads the shared set: labels are KB ids
        if where.kb_ids is not None:
            kb_ids: Sequence[str] = where.kb_ids
        elif where.file_ids is not None:
            kb_ids = sorted({k.kb_id for k in self.catalog.links(file_ids=where.file_ids)})
        else:
            kb_ids = [kb.id for kb in self.catalog.list_kbs()]
        if where.file_ids is not None and len(kb_ids) > 1:
            kb_ids = self._one_set_per_file(where.file_ids, kb_ids, special)
        labels = tuple(special[k].label if k in special else k for k in kb_ids)
        return replace(where, kb_ids=labels)

    def _one_set_per_file(
        self, file_ids: Sequence[str], kb_ids: Sequence[str], special: dict[str, KbChunkSets]
    ) -> list[str]:
        """Files searched by id read one chunk set each (the shared one if a KB has it),
        not one per chunking of the KBs holding them."""
        chosen: dict[str, str] = {}
        for link in self.catalog.links(file_ids=file_ids, kb_ids=kb_ids):
            shared = link.kb_id not in special or special[link.kb_id].shared
            held = chosen.get(link.file_id)
            if held is None or (shared and held in special and not special[held].shared):
                chosen[link.file_id] = link.kb_id
        return sorted(set(chosen.values()))

    def visible(self, results: Sequence[ScoredChunk]) -> None:
        """The results' chunks with the KB ids whose searches read them, not labels."""
        special = self.labels.special()
        if not special:
            return
        for result in results:
            kb_ids = tuple(
                kb_of_label(label)
                for label in result.chunk.kb_ids
                if label == special.get(kb_of_label(label), _plain(label)).label
            )
            result.chunk = replace(result.chunk, kb_ids=kb_ids)


def _plain(label: str) -> KbChunkSets:
    return KbChunkSets(kb_of_label(label), kb_of_label(label))


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
