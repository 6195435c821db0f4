"""Ingestion: source → loader → splitter → embed what is not cached → store → catalog.

Embedding is batched across files (FLUSH_CHUNKS), so many small files still run the encoder
at full batches; each flush is one write to the chunk store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextvars import copy_context
from dataclasses import replace
from functools import partial

from citewell.catalog import Catalog, FileLink, FileRecord
from citewell.catalog.storage import FileStorage
from citewell.config import Settings
from citewell.embedders import CachedEmbedder, embedding_tenant
from citewell.embedders.base import foreground
from citewell.enrich import Enricher
from citewell.errors import CitewellError, StoreError
from citewell.ingest.chunk_rows import ChunkRows, sha256, with_vector
from citewell.ingest.chunk_sets import ChunkSets
from citewell.ingest.links import LINKS_PER_FLUSH, PendingLink, plan_links
from citewell.ingest.run import IngestRun, Parsing, PendingFile, Preloaded, prepare_file, vectors_of
from citewell.ingest.sentences import SpaceWriter, sentence_rows
from citewell.ingest.types import (
    ActiveSpace,
    ChunkTarget,
    IngestProgress,
    Observer,
    ProgressCallback,
    Reader,
)
from citewell.jobs.turns import TurnLock
from citewell.sources import SourceItem
from citewell.splitters import Splitter
from citewell.stores.base import ChunkStore
from citewell.tracing import span
from citewell.types import ChunkFilter, Document, IngestReport

FLUSH_CHUNKS = 256  # chunks gathered across files before one embedding pass and one write
PARSE_AHEAD = 4  # files handed to the parsers per parser, beyond the one being embedded
SLOW_PARSE = 1.0  # seconds of waiting for a parser before the pending files are embedded
COMPACT_EVERY = 20  # flushes between store optimisations during a long ingest


class Ingestor:
    """Adds sources to knowledge bases and takes files out of them; one run at a time."""

    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        storage: FileStorage,
        space: Callable[[], ActiveSpace],
        reader: Reader,
        lock: TurnLock | threading.Lock | None,
        splitter: Callable[[CachedEmbedder], Splitter],
        enricher: Callable[[], Enricher],
        sets: ChunkSets,
    ) -> None:
        """``space`` returns the active embedding space's handle (embedder, store); it is
        read on every use, and changes only while ``lock`` is held. ``splitter`` gives the
        splitter in force for an embedder (chunking settings may change at run time);
        ``enricher`` what writes chunk contexts and summaries, as the settings now say;
        ``sets`` which chunk sets a file gets in a KB (its own chunking, a re-chunk)."""
        self.settings = settings
        self.sets = sets
        self.rows = ChunkRows(
            settings.retrieval.bm25_stemmer, settings.answering.bypass_embedding_and_retrieval
        )
        self._splitter = splitter
        self.enricher = enricher  # the server's enrichment, for KBs without their own
        self.reader = reader
        self.catalog = catalog
        self.storage = storage
        self._space = space
        # One write at a time; the embedding spaces hold it too while the active one changes.
        self.lock: TurnLock | threading.Lock = lock or TurnLock()

    def parsing(self) -> Parsing:
        """The reader as it is now (tests and the engine may swap it after construction)."""
        split = self.settings.extraction.extract_split_in_worker
        return Parsing(self.reader, self.rows, self.catalog.file_id, split)

    @property
    def embedder(self) -> CachedEmbedder:
        return self._space().embedder

    @property
    def store(self) -> ChunkStore:
        return self._space().store

    @property
    def writer(self) -> SpaceWriter:
        """Writes chunks and their sentence pairs together (reads go to ``store``)."""
        return self._space().writer

    @property
    def splitter(self) -> Splitter:
        return self._splitter(self._space().embedder)

    def ingest(
        self,
        items: Sequence[SourceItem],
        kb: str,
        progress: ProgressCallback | None = None,
        strict: bool = False,
        observer: Observer | None = None,
        optimize: bool = True,
        preloaded: Preloaded | None = None,
        yield_to_waiters: bool = False,
    ) -> IngestReport:
        """Ingest ``items`` into ``kb``; ``observer`` hears each item's steps (the job queue
        records them; it may raise a CitewellError at 'parsing' to skip an item). The job
        queue passes ``optimize=False`` and compacts the store itself, less often, what it
        ``preloaded`` (ingest.preload) without the lock, and ``yield_to_waiters``: once
        another writer waits for the lock, no further item begins (``files_left``)."""
        target = self.catalog.ensure_kb(kb)
        stop = self._others_wait if yield_to_waiters else None
        # The KB owner's cache, no other; a user's own ingest has a core the worker leaves.
        with self.lock, embedding_tenant(target.owner_id), foreground():
            report = self._ingest_items(
                items, target.id, progress, strict, observer, preloaded, stop
            )
            if optimize:
                self.writer.optimize()
            return report

    def _others_wait(self) -> bool:
        waiting = getattr(self.lock, "waiting", None)
        return bool(waiting is not None and waiting())

    def _ingest_items(
        self,
        items: Sequence[SourceItem],
        kb: str,
        progress: ProgressCallback | None,
        strict: bool = False,
        observer: Observer | None = None,
        preloaded: Preloaded | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> IngestReport:
        target_kb = self.catalog.ensure_kb(kb)
        run = IngestRun(
            target_kb,
            IngestProgress(files_total=len(items)),
            progress,
            self.sets.targets(target_kb.id, self.embedder),
            observer=observer,
            preloaded=preloaded,
        )
        existing = self.catalog.files_in_kb(run.kb.id, [item.key for item in items])
        if preloaded is not None:
            run.look_up_stored(self.catalog, preloaded.digests.values())
        embedded_before = self.embedder.embedded
        workers = max(1, self.settings.extraction.extract_workers)
        left = 0
        with ThreadPoolExecutor(workers, thread_name_prefix="citewell-parse") as pool:
            for index, item in enumerate(items):
                if index and stop is not None and stop():
                    left = len(items) - index
                    break
                while len(run.parsing) >= PARSE_AHEAD * workers:
                    self._collect(run, strict, block=True)
                self._guarded(run, item, strict, partial(self._start, run, item, existing, pool))
                self._collect(run, strict, block=False)
            while run.parsing:
                self._collect(run, strict, block=True)
            self._flush(run)  # files identical to one parsed in this run link to it now
            for item in run.later:
                self._guarded(run, item, strict, partial(self._start, run, item, existing, pool))
        self._flush(run)
        return IngestReport(
            files_seen=len(items),
            files_indexed=run.counts.get("indexed", 0),
            files_linked=run.counts.get("linked", 0),
            files_unchanged=run.counts.get("unchanged", 0),
            files_failed=run.counts.get("failed", 0),
            chunks_stored=run.counts.get("chunks", 0),
            chunks_embedded=self.embedder.embedded - embedded_before,
            errors=tuple(run.errors),
            files_left=left,
        )

    def _guarded(
        self, run: IngestRun, item: SourceItem, strict: bool, step: Callable[[], bool]
    ) -> None:
        """Run one item's step; a CitewellError fails the item (or, ``strict``, the run).
        The step returns True when the item is finished (not handed to a parser)."""
        try:
            finished = step()
        except CitewellError as exc:
            if strict:
                raise
            run.bump("failed")
            run.errors.append(f"{item.name}: {exc.message}")
            run.notify(item.key, "failed", error=exc)
            finished = True
        if finished:
            self._done(run, item)

    def _done(self, run: IngestRun, item: SourceItem) -> None:
        run.progress.files_done += 1
        run.progress.current = item.name
        chunks = sum(len(p.chunks) for p in run.pending)
        if chunks >= FLUSH_CHUNKS or len(run.links) >= LINKS_PER_FLUSH:
            self._flush(run)
        if run.callback:
            run.callback(run.progress)

    def _start(
        self,
        run: IngestRun,
        item: SourceItem,
        existing: dict[str, FileRecord],
        pool: ThreadPoolExecutor,
    ) -> bool:
        """Decide what an item needs: nothing (unchanged), a link (its bytes are stored), or
        parsing, which starts in the pool. True when the item is finished."""
        run.notify(item.key, "parsing")
        previous = existing.get(item.key)
        data = item.read()
        digest = sha256(data)
        if previous is not None and previous.sha256 == digest:
            run.bump("unchanged")
            run.notify(item.key, "indexed", previous.id)
            return True
        if any(d == digest for _, d, _ in run.parsing.values()):
            run.later.append(item)  # the same bytes are being parsed right now
            return False
        known = run.stored_file(self.catalog, digest)  # the tenant's own only
        pending_same = next((p for p in run.pending if p.record.sha256 == digest), None)
        if known is None and pending_same is None:
            future = run.preloaded.parsed(item.key, digest, run.targets) if run.preloaded else None
            if future is None:
                prepare = partial(
                    prepare_file, self.parsing(), item, data, digest, run.kb.owner_id, run.targets
                )
                future = pool.submit(copy_context().run, prepare)  # splitters embed as tenant
            run.parsing[future] = (item, digest, previous)
            return False
        file_id = (known or pending_same.record).id  # type: ignore[union-attr]
        run.links.append(PendingLink(item, file_id, previous))  # written at the next flush
        return True

    def _collect(self, run: IngestRun, strict: bool, block: bool) -> None:
        """Take the parsed files that are ready. With ``block``, wait for one; if none is
        done within SLOW_PARSE seconds, embed what is pending meanwhile, so a slow parser
        never holds back other files (and fast ones still make full embedding batches)."""
        if block and not wait(run.parsing, SLOW_PARSE, FIRST_COMPLETED).done:
            self._flush(run)
            with span("parse", waiting=len(run.parsing)):  # the parsers' processes at work
                wait(run.parsing, return_when=FIRST_COMPLETED)
        for future in [f for f in run.parsing if f.done()]:
            item, _, previous = run.parsing.pop(future)
            step = partial(self._parsed, run, future, item, previous)
            self._guarded(run, item, strict, step)

    def _parsed(
        self,
        run: IngestRun,
        future: Future[PendingFile],
        item: SourceItem,
        previous: FileRecord | None,
    ) -> bool:
        run.pending.append(future.result())  # raises the parser's error, if any
        run.notify(item.key, "embedding")
        if previous is not None:
            self._replace(run, previous)
        return True

    def _replace(self, run: IngestRun, previous: FileRecord) -> None:
        """A path's file changed (the path already points at the new version): the old one
        leaves this KB once the new one is in, unless another path of the KB still holds it."""
        self._flush(run)
        self._drop_replaced(run, previous)

    def _drop_replaced(self, run: IngestRun, previous: FileRecord) -> None:
        if not self.catalog.paths_in_kb(run.kb.id, previous.id):  # no other path holds it
            self.remove_from_kb(run.kb.id, previous.id)

    def _flush(self, run: IngestRun) -> None:
        """Store the parsed files, then the links gathered (a link may be to one of them)."""
        self._store_pending(run)
        self._store_links(run)

    def _store_links(self, run: IngestRun) -> None:
        if not run.links:
            return
        links, run.links = run.links, []
        self.link_many(run.kb.id, [(link.file_id, link.item) for link in links], run.targets)
        for link in links:
            run.bump("linked")
            run.notify(link.item.key, "indexed", link.file_id)
            if link.previous is not None:
                self._drop_replaced(run, link.previous)

    def _store_pending(self, run: IngestRun) -> None:
        """Embed every pending chunk in one pass (full batches), then store them in one write."""
        if not run.pending:
            return
        chunks = [c for p in run.pending for c in p.chunks]
        pairs = [c for p in run.pending for c in p.pairs]
        with span("embed", files=len(run.pending)):
            vectors, pair_vectors = vectors_of(self.embedder, run.pending)
        rows = len(chunks) + len(pairs)
        with span("write", rows=rows, files=len(run.pending)), ThreadPoolExecutor(1) as pool:
            stored = pool.submit(copy_context().run, self._store_files, run.pending)
            self.writer.upsert_matrix(chunks, vectors, pairs, pair_vectors)
            stored.result()
        # One transaction for the batch's files and one for their links (one each per
        # file was most of what a file cost once embedding was fast).
        self.catalog.add_files([p.record for p in run.pending])
        run.stored.update((p.record.sha256, p.record) for p in run.pending)
        self.catalog.add_links([self.link_of(run.kb.id, p.record.id, p.item) for p in run.pending])
        for pending in run.pending:
            run.bump("indexed")
            run.notify(pending.item.key, "indexed", pending.record.id)
            run.bump("chunks", len(pending.chunks))
            run.progress.chunks_done += len(pending.chunks)
        run.pending.clear()
        run.bump("flushes")
        if run.counts["flushes"] % COMPACT_EVERY == 0:
            self.writer.optimize()  # long ingests: keep fragments few and indexes current

    def _store_files(self, pending: Sequence[PendingFile]) -> None:
        """Each file's original, text and sections, on a thread while LanceDB writes the
        chunks (it leaves the GIL); the catalog rows come after both."""
        for file in pending:
            self.storage.put(file.record.id, file.data, file.text, file.sections)

    def reindex(self, record: FileRecord, data: bytes) -> int:
        """Rebuild a file's chunks from its original: same id, same KBs, each set anew. The
        caller holds ``lock``. Chunk ids depend on content only, so embeddings come from the
        cache."""
        document = self.reader.read(data, record.name)
        self.storage.put(record.id, data, document.text, document.sections)
        self.writer.delete(ChunkFilter(file_ids=(record.id,)))
        kb_ids = self.catalog.kbs_of_file(record.id)
        sets = {k: self.sets.labels.of(k) for k in kb_ids}
        shared = tuple(k for k in kb_ids if sets[k].shared)
        counts = []
        if shared:
            target = self.sets.target(shared[0], shared[0], self.embedder)
            counts.append(self._write_set(record.id, document, target, record.name, shared))
        for kb_id in kb_ids:
            for label in sets[kb_id].writing:
                if label != kb_id:
                    target = self.sets.target(kb_id, label, self.embedder)
                    counts.append(self._write_set(record.id, document, target, record.name))
        self.catalog.add_file(
            replace(
                record,
                text_sha256=sha256(document.text.encode()),
                mime_type=document.mime_type,
                title=document.title or "",
                chunk_count=counts[0] if counts else 0,  # of its first set, as at ingestion
            )
        )
        return sum(counts)

    def add_set(self, record: FileRecord, kb_id: str, target: ChunkTarget) -> int:
        """Give a stored file a chunk set in ``target``: a link into the shared set when
        another KB reads it, else its stored text split anew (no parsing). Returns how many
        chunks were written. The caller holds ``lock``."""
        if target.shared:
            peer = self.sets.shared_peer(record.id, kb_id)
            if peer is not None:
                self.writer.link_files([record.id], target.label, within=peer)
                return 0
        return self._write_set(record.id, self._stored_document(record), target, record.name)

    def _write_set(
        self,
        file_id: str,
        document: Document,
        target: ChunkTarget,
        name: str,
        labels: tuple[str, ...] = (),
    ) -> int:
        chunks, texts = self.rows.make(file_id, document, target, name, labels)
        if not texts:
            return 0
        pairs, pair_texts = sentence_rows(chunks, texts) if target.sentences else ([], [])
        vectors = self.embedder.embed(texts + pair_texts, "document")
        rows = [with_vector(c, v) for c, v in zip([*chunks, *pairs], vectors, strict=True)]
        self.writer.upsert(rows[: len(chunks)], rows[len(chunks) :])
        return len(chunks)

    def _stored_document(self, record: FileRecord) -> Document:
        text = self.storage.text(record.id)
        if text is None:
            raise StoreError(
                f"The extracted text of {record.name!r} ({record.id}) is missing; run "
                "'citewell check --repair' or upload the file again."
            )
        sections = tuple(self.storage.sections(record.id))
        return Document(text, record.name, record.mime_type, sections, record.title or None)

    def link(self, kb_id: str, file_id: str, item: SourceItem) -> None:
        """Identical bytes are stored and embedded once; the link keeps this item's name.
        A KB with its own chunking gets its own set of the file, from the stored text."""
        self.link_many(kb_id, [(file_id, item)], self.sets.targets(kb_id, self.embedder))

    def link_many(
        self,
        kb_id: str,
        entries: Sequence[tuple[str, SourceItem]],
        targets: Sequence[ChunkTarget],
    ) -> None:
        """Stored files into ``kb_id`` under their items' paths (ingest.links): one store
        update per group of files joining the same shared set, one catalog transaction."""
        plan = plan_links(self.catalog, self.sets.labels, kb_id, [f for f, _ in entries], targets)
        for (label, peer), file_ids in plan.joins.items():
            self.writer.link_files(file_ids, label, within=peer)
        for file_id, target in plan.writes:
            record = self.catalog.get_file(file_id)
            if record is not None:
                self.add_set(record, kb_id, target)
        links = [self.link_of(kb_id, f, i) for f, i in entries]
        self.catalog.add_links(links)

    @staticmethod
    def link_of(kb_id: str, file_id: str, item: SourceItem) -> FileLink:
        """The catalog's link: what this KB's users see of the item (decision 0020)."""
        return FileLink(
            kb_id, file_id, item.key, item.name, item.added_by, 0.0, item.source, item.url
        )

    def remove_from_kb(self, kb_id: str, file_id: str) -> None:
        """Take a file out of a KB (out of each set the KB has of it: chunks left in no KB
        go); delete its record once no KB holds it."""
        self.catalog.unlink(kb_id, file_id)
        sets = self.sets.labels.of(kb_id)
        for label in dict.fromkeys((*sets.writing, sets.retired)):
            if label:
                self.writer.unlink(file_id, label)
        if not self.catalog.kbs_of_file(file_id):
            self.delete_file(file_id)

    def delete_file(self, file_id: str) -> None:
        """Every chunk, vector, index entry, stored text and original of the file goes."""
        self.writer.delete(ChunkFilter(file_ids=(file_id,)))
        self.catalog.delete_file(file_id)
        self.storage.delete(file_id)
