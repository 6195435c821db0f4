"""The engine: ingestion, search and the online operations of one data dir behind one
facade; answering (``citewell.answer``) and the root (``citewell.app.Citewell``) build on it.

Ingest: source → loader → splitter → embed what is not cached → store → catalog
(``citewell.ingest``). Search: query → retrievers (vector, BM25) → fusion → rerank →
threshold (``citewell.retrieval``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from citewell.auth.accounts import Accounts
from citewell.catalog import Catalog, FileRecord, KnowledgeBase
from citewell.catalog.kb_settings import NO_SETTINGS, KnowledgeSettings
from citewell.catalog.storage import FileStorage
from citewell.catalog.uploads import Uploads
from citewell.config import Settings
from citewell.config.resolve import Choice, resolve
from citewell.embedders import CachedEmbedder
from citewell.engine.as_linked import describe_as_linked
from citewell.engine.runner import JobRunner
from citewell.enrich import Enricher
from citewell.errors import FileNotFound
from citewell.ingest.chunk_rows import sha256
from citewell.ingest.chunk_sets import ChunkSets
from citewell.ingest.connector_runs import connector_runs
from citewell.ingest.estimate import estimate_ingest
from citewell.ingest.ingestor import Ingestor
from citewell.ingest.reading import reader_from_settings, render_pool
from citewell.ingest.rechunk import Rechunker
from citewell.ingest.types import IngestEstimate, ProgressCallback
from citewell.ingest.web import UrlIngest, WebSearchOutcome, WebSources
from citewell.jobs import Job
from citewell.jobs.leader import WorkerElection
from citewell.live_settings import LiveSettings, enrich_config, kb_ranking
from citewell.llm.base import LLM
from citewell.loaders import DocumentReader
from citewell.loaders.isolated import IsolatedReader, ReaderPool
from citewell.operations.check import CheckReport, ConsistencyCheck
from citewell.operations.spaces import EmbeddingSpaces
from citewell.retrieval import HybridRetriever, RetrievalTrace
from citewell.sources import SourceItem, text_item
from citewell.sources.kinds import uploaded
from citewell.sources.registry import gather
from citewell.splitters import Splitter, budget_measure
from citewell.stores.base import ChunkStore
from citewell.types import ChunkFilter, IngestReport, ScoredChunk, SearchMode


class Engine:
    """The unchecked facade over one data dir; services reach it through a caller's Scoped."""

    def __init__(
        self,
        live: LiveSettings,
        catalog: Catalog,
        storage: FileStorage,
        spaces: EmbeddingSpaces,
        retriever: HybridRetriever,
        accounts: Accounts,
        reader: DocumentReader | IsolatedReader | ReaderPool | None = None,
        llm: LLM | None = None,
    ) -> None:
        """``live``: the settings, some of which admins may change while it runs;
        ``accounts``: users, grants and the audit trail (services record into it)."""
        settings = live.start
        self.live, self.accounts = live, accounts
        self.llm = llm  # None: answers are extractive
        self.catalog = catalog
        self.storage = storage
        self.spaces = spaces
        self.measure = budget_measure(self.embedder)  # prompt budgets and input limits
        self.retriever = retriever
        self.reader = reader or reader_from_settings(settings)
        self.renders = render_pool(settings, self.reader)  # the viewer's page images
        self.chunk_sets = ChunkSets(catalog, live, self.enricher_for)
        self.ingestor = Ingestor(
            settings,
            catalog,
            storage,
            lambda: spaces.active,
            self.reader,
            spaces.lock,
            splitter=live.splitter_for,
            enricher=lambda: self.enricher,
            sets=self.chunk_sets,
        )
        self.web = WebSources.from_settings(settings, catalog, self.ingestor)
        self.jobs = spaces.jobs
        self.rechunker = Rechunker(self.chunk_sets, self.ingestor, self.jobs)
        self.connectors = connector_runs(
            settings, catalog.engine, self.ingestor, self.web.reader, self.jobs
        )
        self.uploads = Uploads(catalog.engine, storage.blobs)  # awaiting a KB
        self.runner: JobRunner | None = None  # started by the server (start_workers)
        self.election: WorkerElection | None = None  # several processes on an embedded dir
        self.contexts = spaces.contexts  # what the LLM wrote about chunks, by what made it
        self._enrichers: dict[object, Enricher] = {}
        self._kb_ids: dict[str, str] = {}  # name or id → id; KB ids never change

    @property
    def settings(self) -> Settings:
        """The settings in force now: start-up values with admins' run-time changes."""
        return self.live.settings

    @property
    def enricher(self) -> Enricher:
        """What writes chunk contexts and document summaries, as the settings now say."""
        return self.enricher_for(self.settings)

    def enricher_for(self, settings: Settings) -> Enricher:
        """The enricher ``settings`` (the server's, or a KB's chunking) ask for."""
        config = enrich_config(settings)
        if config not in self._enrichers:
            if len(self._enrichers) >= 8:
                self._enrichers.clear()
            self._enrichers[config] = Enricher(self.llm, self.contexts, config)
        return self._enrichers[config]

    # The active embedding space's parts, read from its handle on each use.
    @property
    def embedder(self) -> CachedEmbedder:
        return self.spaces.active.embedder

    @property
    def store(self) -> ChunkStore:
        return self.spaces.active.store

    @property
    def splitter(self) -> Splitter:
        return self.live.splitter_for(self.embedder)

    def start_workers(self, shared: bool = False) -> None:
        """Run queued ingest jobs in this process (the server does; CLI commands do not).
        ``shared``: several server processes run on this data dir; on the embedded store
        only the one elected (jobs/leader.py) runs jobs, on PostgreSQL all of them do."""
        if shared and not self.settings.storage.database_url:
            if self.election is None:
                self.election = WorkerElection(self.settings.storage.data_dir, self.start_workers)
                self.election.start()
            return
        if self.runner is None:
            jobs = self.settings.jobs
            self.runner = JobRunner(
                self.jobs, self.ingestor, self.storage, jobs.job_batch_files,
                jobs.job_retry_seconds, spaces=self.spaces, rechunker=self.rechunker,
                connectors=self.connectors, max_batch_files=jobs.job_batch_max_files,
            )  # fmt: skip
            self.runner.start()

    def close(self) -> None:
        """Stop the job worker, the extraction worker and the web clients."""
        if self.election is not None:
            self.election.stop_trying()
        if self.runner is not None:
            self.runner.stop()
            self.runner = None
        if self.election is not None:
            self.election.release()  # only now may another process run the jobs
            self.election = None
        self.web.close()
        self.reader.close()
        self.renders.close()

    # --- knowledge bases ----------------------------------------------------------
    def create_kb(
        self,
        name: str,
        description: str = "",
        owner_id: str = "",
        settings: KnowledgeSettings = NO_SETTINGS,
    ) -> KnowledgeBase:
        if settings.chunking:
            self.live.chunking(settings.chunking_map)  # refuse what cannot split anything
        created = self.catalog.create_kb(name, description, owner_id, settings)
        self._kb_ids.clear()  # the name may have meant another KB until now
        if settings.chunking:
            self.rechunker.start(created.id)  # empty: reads its own set at once
        return created

    def update_kb(
        self,
        name_or_id: str,
        name: str | None = None,
        description: str | None = None,
        settings: KnowledgeSettings | None = None,
    ) -> KnowledgeBase:
        """A change of the KB's chunking re-chunks it through the job queue."""
        kb = self.catalog.get_kb(self.kb_id(name_or_id))
        rechunk = settings is not None and settings.chunking != kb.settings.chunking
        if rechunk and settings is not None:
            self.live.chunking(settings.chunking_map)  # refuse what cannot split anything
        updated = self.catalog.update_kb(kb.id, name, description, settings)
        self._kb_ids.clear()  # names may now point elsewhere
        if rechunk:
            self.rechunker.start(kb.id)
            if self.runner is not None:
                self.runner.wake()
        return updated

    def kb_id(self, name_or_id: str) -> str:
        """The id of a KB, remembered: the catalog is asked once per name."""
        if name_or_id not in self._kb_ids:
            self._kb_ids[name_or_id] = self.catalog.get_kb(name_or_id).id
        return self._kb_ids[name_or_id]

    def list_kbs(self) -> list[KnowledgeBase]:
        return self.catalog.list_kbs()

    def delete_kb(self, name_or_id: str) -> None:
        kb = self.catalog.get_kb(name_or_id)
        for job in self.jobs.find(kb_id=kb.id):  # queued files have nowhere to go now
            if not job.done:
                self.jobs.cancel(job.id)
        with self.ingestor.lock:
            for record in set(self.catalog.files_in_kb(kb.id).values()):
                self.ingestor.remove_from_kb(kb.id, record.id)
        self.catalog.delete_kb(kb.id)
        self._kb_ids = {k: v for k, v in self._kb_ids.items() if v != kb.id}

    # --- ingestion ----------------------------------------------------------------
    def wait_for_index_training(self, timeout: float | None = None) -> bool:
        """Wait for a vector training this process's writes started in the background (a
        command about to exit), then fold in the rows written meanwhile; whether none runs."""
        return self.ingestor.writer.wait_then_fold(self.ingestor.lock, timeout)

    def ingest(
        self,
        targets: Sequence[Path | str],
        kb: str,
        progress: ProgressCallback | None = None,
        source: str = "",
    ) -> IngestReport:
        """Files, folders (recursively) and http(s) URLs, or targets of the source kind
        ``source``; a URL that cannot be fetched counts as a failed file, like a file that
        cannot be read."""
        items, failed = self.items(targets, source)
        report = self.ingest_items(items, kb, progress)
        return replace(
            report,
            files_seen=report.files_seen + len(failed),
            files_failed=report.files_failed + len(failed),
            errors=(*failed, *report.errors),
        )

    def estimate(
        self, items: Sequence[SourceItem], use_cache: bool = True, kb: str | None = None
    ) -> IngestEstimate:
        """What ingesting ``items`` (into ``kb``, split its way) would take: chunks, and the
        LLM calls and prompt tokens of contextual_chunks / document_summary (nothing is
        stored)."""
        return estimate_ingest(self.ingestor, items, use_cache, self.kb_id(kb) if kb else None)

    def ingest_texts(
        self,
        texts: Iterable[tuple[str, str]],
        kb: str,
        mime_type: str = "text/plain",
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        items = [text_item(name, text, mime_type) for name, text in texts]
        return self.ingest_items(items, kb, progress)

    def ingest_items(
        self, items: Sequence[SourceItem], kb: str, progress: ProgressCallback | None = None
    ) -> IngestReport:
        return self.ingestor.ingest(items, kb, progress)

    def ingest_url(
        self, url: str, kb: str | None = None, languages: Sequence[str] = (), added_by: str = ""
    ) -> UrlIngest:
        """Fetch a web page, remote file or YouTube transcript into ``kb`` (default 'web')."""
        return self.web.ingest_url(url, kb, languages, added_by)

    def web_search(
        self,
        queries: Sequence[str],
        kb: str | None = None,
        count: int | None = None,
        for_tools: bool = False,
    ) -> WebSearchOutcome:
        """Search the web and ingest the result pages into ``kb`` (default 'web-search');
        ``for_tools``: only pages a model's tools may reach (tool_web_domains)."""
        return self.web.search(queries, kb, count, for_tools)

    def check(self, repair: bool = False, recall_samples: int = 20) -> CheckReport:
        """Differences between the catalog, the chunk store and the stored files; ``repair``
        makes them agree (see operations/check.py for what each repair does)."""
        # A step running longer than extraction may take, and then some, has lost its worker.
        stuck_after = 2 * self.settings.extraction.extract_timeout + 600
        return ConsistencyCheck(
            self.catalog,
            self.store,
            self.storage,
            self.ingestor,
            self.jobs,
            stuck_after,
            recall_samples,
        ).run(repair)

    # --- files --------------------------------------------------------------------
    def upload(
        self, kb: str, name: str, data: bytes, added_by: str = "", path: str = ""
    ) -> tuple[FileRecord, IngestReport]:
        """Add one file's bytes to a KB, under ``path`` ("a/b.md"; "": a path named after
        the bytes, so files of one name are all kept). The same bytes again in the KBs of
        one owner are one file, stored and embedded once; the link keeps ``name``."""
        item = uploaded(name, data)
        item = replace(item, key=path or item.key, added_by=added_by)
        report = self.ingestor.ingest([item], kb, None, strict=True)
        record = self.stored_file(kb, data)
        assert record is not None  # strict ingest either stored it or raised
        return record, report

    def stored_file(self, kb: str, data: bytes) -> FileRecord | None:
        """The file holding these bytes among the files of the KB's owner (its tenant), if
        any: another owner's copy is never found (decision 0020)."""
        return self.catalog.file_by_sha(sha256(data), self.catalog.get_kb(kb).owner_id)

    def enqueue_uploads(
        self, kb: str, files: Sequence[tuple[str, bytes]], added_by: str = "", folder: str = ""
    ) -> list[Job]:
        """Queue uploaded files for ingestion into ``kb`` (identical bytes are one file;
        ``folder``: each goes there under its name)."""
        items = [uploaded(name, data) for name, data in files]
        if folder:
            items = [replace(item, key=f"{folder}/{item.name}") for item in items]
        return self.enqueue(kb, items, added_by)

    def enqueue(self, kb: str, items: Sequence[SourceItem], added_by: str = "") -> list[Job]:
        """Queue items for ingestion into ``kb``, as one batch: each is read and staged on
        disk, then gets a job that a worker (server, `citewell worker`) runs."""
        kb_id = self.kb_id(kb)
        entries = []
        for item in items:
            job_id = self.jobs.new_id()
            self.storage.stage(job_id, item.read())
            entries.append((job_id, item.name, item.key))
        jobs = self.jobs.enqueue(
            kb_id, entries, self.settings.jobs.job_max_attempts, added_by=added_by
        )
        if self.runner is not None:
            self.runner.wake()
        return jobs

    def items(
        self, targets: Sequence[Path | str], source: str = ""
    ) -> tuple[list[SourceItem], list[str]]:
        """The targets as items, through the source kind ``source`` (default: a URL or a
        path, by its look), and the targets that failed (``sources.registry.gather``)."""
        return gather([str(t) for t in targets], source, self.web.source_context())

    def get_file(self, file_id: str) -> FileRecord:
        record = self.catalog.get_file(file_id)
        if record is None:
            raise FileNotFound(f"No file {file_id!r}; list files with GET /api/v1/files.")
        return record

    def files(self, kb: str | None = None) -> list[FileRecord]:
        if kb is None:
            return self.catalog.list_files()
        return sorted(
            set(self.catalog.files_in_kb(self.kb_id(kb)).values()), key=lambda f: f.created_at
        )

    def add_file(
        self,
        kb: str,
        file_id: str,
        name: str = "",
        added_by: str = "",
        seen: FileRecord | None = None,
    ) -> None:
        """Put an existing file into another KB: its chunks are shared and nothing is
        embedded (a KB with its own chunking splits the stored text; see chunk_sets).
        ``seen``: the file as the caller sees it, whose source and URL the new link keeps."""
        record = seen or self.get_file(file_id)
        item = SourceItem(f"upload:{record.id}", name or record.name, bytes, added_by=added_by)
        item = replace(item, source=record.source, url=record.url)
        with self.ingestor.lock:
            self.ingestor.link(self.kb_id(kb), record.id, item)

    def remove_file(self, kb: str, file_id: str) -> None:
        """Take a file out of one KB (deleted once no KB holds it); another KB's is missing."""
        kb_id = self.kb_id(kb)
        if kb_id not in self.catalog.kbs_of_file(file_id):
            raise FileNotFound(f"No file {file_id!r} in this knowledge base; list its files.")
        with self.ingestor.lock:
            self.ingestor.remove_from_kb(kb_id, file_id)

    def delete_file(self, file_id: str) -> None:
        """Delete a file from every KB and from disk, in one operation."""
        record = self.get_file(file_id)
        with self.ingestor.lock:
            for kb_id in self.catalog.kbs_of_file(record.id):
                self.catalog.unlink(kb_id, record.id)
            self.ingestor.delete_file(record.id)

    # --- retrieval ----------------------------------------------------------------
    def search(
        self,
        query: str,
        kbs: Sequence[str],
        mode: SearchMode | None = None,
        k: int | None = None,
        trace: RetrievalTrace | None = None,
    ) -> list[ScoredChunk]:
        ids = tuple(self.kb_id(name) for name in kbs)
        return self.search_where(query, ChunkFilter(kb_ids=ids), mode, k, trace)

    def search_where(
        self,
        query: str,
        where: ChunkFilter,
        mode: SearchMode | None = None,
        k: int | None = None,
        trace: RetrievalTrace | None = None,
        threshold: float | None = None,
    ) -> list[ScoredChunk]:
        """Search the chunks ``where`` allows (KBs and/or files), filtered inside the store.
        The query is cut to query_max_tokens, so no query costs more than a short one."""
        query = self.clip_query(query)
        self.spaces.refresh()
        in_force = self.live.current
        own = self.catalog.kb_settings(where.kb_ids or ())
        asked = Choice(top_k=k or None, mode=mode, relevance_threshold=threshold)
        choice = resolve(in_force.settings, asked, own.choice())
        ranking = kb_ranking(in_force.ranking, own)
        labelled = self.chunk_sets.where(where)  # the chunk sets these KBs read now
        results = self.retriever.search(
            query, labelled, choice.top_k, choice.mode, trace, choice.relevance_threshold, ranking
        )
        self.chunk_sets.visible(results)
        for result in results:
            kbs = where.kb_ids or result.chunk.kb_ids
            result.kb_id = next((kb for kb in kbs if kb in result.chunk.kb_ids), None)
        return describe_as_linked(self.catalog, results)

    def retrieval_defaults(self, where: Sequence[ChunkFilter]) -> KnowledgeSettings:
        """The retrieval defaults that the KBs of all of ``where`` share, if they do."""
        kb_ids = {kb for scope in where for kb in scope.kb_ids or ()}
        if any(not scope.kb_ids for scope in where):
            return NO_SETTINGS  # a file or everything readable: the server's settings
        return self.catalog.kb_settings(kb_ids)

    def clip_query(self, text: str, keep_end: bool = False) -> str:
        return self.measure.clip(text, self.settings.retrieval.query_max_tokens, keep_end)
