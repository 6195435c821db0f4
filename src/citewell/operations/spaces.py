"""Embedding spaces and the switch from one embedding model to another, online.

A server started with a different model (or dimension) does not open an empty index: the
space that was active stays active, with the embedder it was made by (rebuilt from the
settings kept with it), while every file is re-embedded into the new space by re-embed jobs
in the job queue. Files added, changed or deleted meanwhile go to the active space and are
caught up at the end. When no re-embed job is left, the last differences are copied with
ingestion paused, the new space becomes active in one transaction, and from the next query
on searches use it. The old table is dropped a minute later (queries still in it finish).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from itertools import groupby

import numpy as np

from citewell.catalog import Catalog
from citewell.catalog.spaces import ACTIVE, BUILDING, SpaceRecord, SpaceRegistry
from citewell.config import Settings
from citewell.embedders import CachedEmbedder, Embedder, VectorCache, build_embedder
from citewell.embedders.base import LoadsLazily
from citewell.enrich import ContextCache, stored_enrichment
from citewell.errors import ConfigError
from citewell.ingest.chunk_rows import embed_text, sentence_table, space_table, with_vector
from citewell.ingest.sentences import SpaceWriter
from citewell.jobs import Job, JobStore
from citewell.jobs.turns import TurnLock
from citewell.retrieval.retriever import SearchSpace
from citewell.stores.base import ChunkStore, drop_store, scanning, warm_searches
from citewell.stores.lazy import open_now, opened_on_first_use
from citewell.stores.registry import open_chunk_store
from citewell.types import ChunkFilter, StoredChunk

logger = logging.getLogger(__name__)

EMBEDDING_SETTINGS = Settings.names_where(space=True)
PATH_SETTINGS = ("embedding_onnx_path", "embedding_tokenizer_path")
DROP_AFTER = 60.0  # seconds a retired space's table is kept for queries still running in it
REFRESH_EVERY = 1.0  # seconds between checks whether another process switched spaces
COPY_FILES = 64  # files re-embedded together while catching up


def embedding_config(settings: Settings) -> dict[str, str | int | float | None]:
    """The settings that make an embedder, as JSON-able values."""
    return settings.embedding.model_dump(mode="json")


def settings_with(settings: Settings, config: dict[str, str | int | float | None]) -> Settings:
    """``settings`` with the embedding settings a space was made with."""
    update = {k: v for k, v in config.items() if k in EMBEDDING_SETTINGS}
    for name in PATH_SETTINGS:  # unset in the record: none (not the settings' own path)
        update[name] = update.get(name) or None
    return settings.with_values(update)


@dataclass(frozen=True)
class Space:
    """A space ready for use: its record, the embedder that made it, its chunk table and
    the table of its chunks' sentence pairs (``ingest.sentences``). An immutable handle:
    ingestion and retrieval read ``EmbeddingSpaces.active`` once per operation, and a
    switch replaces it whole."""

    record: SpaceRecord
    embedder: CachedEmbedder
    store: ChunkStore
    sentences: ChunkStore

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def search_space(self) -> SearchSpace:
        return SearchSpace(self.store, self.embedder, self.sentences)

    @property
    def writer(self) -> SpaceWriter:
        return SpaceWriter(self.store, self.sentences)


@dataclass(frozen=True)
class SwitchStatus:
    """Where a model switch stands: the space being built and its re-embed jobs by state."""

    target: SpaceRecord
    jobs: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.jobs.values())

    @property
    def stalled(self) -> bool:
        """Some file failed to re-embed (or was cancelled): retry it and the switch goes on."""
        return bool(self.jobs.get("failed") or self.jobs.get("cancelled"))


class EmbeddingSpaces:
    """The active space (searched and written) and, during a switch, the one being built."""

    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        jobs: JobStore,
        cache: VectorCache,
        lock: TurnLock | threading.Lock,
        embedder: Embedder | None = None,
        known: Sequence[Embedder] = (),
        switch: bool = True,
    ) -> None:
        """``embedder`` is the one the settings name (built from them if not given);
        ``known`` are embedders of earlier spaces that settings cannot rebuild (tests).
        Only with ``switch`` (the server, workers) may settings naming another model begin
        a switch (or give one up); other processes just use the active space."""
        self.settings = settings
        self.catalog = catalog
        self.jobs = jobs
        self.cache = cache
        self.lock = lock  # the ingestor's: held while the active space changes
        self.registry = SpaceRegistry(catalog.engine)
        self.contexts = ContextCache(catalog.engine)  # what chunks were embedded with
        self._known = {e.model_id: e for e in known}  # embedders not made from settings
        self._checked = time.monotonic()
        self.target: Space | None = None
        embedder = embedder or build_embedder(settings)
        # The server and workers (``switch``) load the model and open the tables now, so
        # that neither fails or waits on a first request; a command does on first use.
        self._eager = switch
        self._serving = False  # whether this process serves searches (warm_searches)
        self._known[embedder.model_id] = embedder  # another process may switch to it
        wanted = self._space_for(settings, embedder)
        self.active = self._start(wanted) if switch else self._follow(wanted)
        if switch:
            self.warm()

    # --- opening --------------------------------------------------------------------
    def _space_for(self, settings: Settings, embedder: Embedder) -> Space:
        record = SpaceRecord(
            id=space_table(embedder.model_id, embedder.dimension),
            model_id=embedder.model_id,
            dimension=embedder.dimension,
            config=embedding_config(settings),
        )
        return self._open(record, embedder)

    def _open(self, record: SpaceRecord, embedder: Embedder | None = None) -> Space:
        embedder = embedder or self._rebuild(record)
        store = self._table(record.id, record.dimension)
        sentences = self._table(sentence_table(record.id), record.dimension)
        cached = CachedEmbedder(embedder, self.cache, self.settings.access.share_embeddings)
        return Space(record, cached, store, sentences)

    def warm(self) -> None:
        """Open the active space's tables and load its model now: a long-running command
        (``citewell mcp``) that should not make its first call wait for them."""
        space = self.active
        open_now(space.store)
        open_now(space.sentences)
        if isinstance(space.embedder.inner, LoadsLazily):
            space.embedder.inner.warm()

    def warm_searches(self) -> None:
        """Load what the active space's searches read, now and after each switch (a process
        that serves them)."""
        self._serving = True
        warm_searches(self.active.store)
        warm_searches(self.active.sentences)

    def _table(self, name: str, dimension: int) -> ChunkStore:
        opening = partial(open_chunk_store, self.settings, name, dimension)
        return opening() if self._eager else opened_on_first_use(opening)

    def _rebuild(self, record: SpaceRecord) -> Embedder:
        """The embedder a recorded space was made by, from its kept settings."""
        embedder = self._known.get(record.model_id)
        if embedder is None:
            embedder = build_embedder(settings_with(self.settings, record.config))
        if embedder.model_id != record.model_id:
            raise ConfigError(
                f"The active embedding space was made by {record.model_id}, which cannot be "
                f"rebuilt here (got {embedder.model_id}). Start once with the settings it "
                "was made with, or move the data dir aside to start empty."
            )
        return embedder

    def _active_record(self, wanted: Space) -> SpaceRecord:
        """The active space's record; a new data dir (or one from before spaces) gets the
        wanted space as its first."""
        if self.registry.active() is None:
            self.registry.add(wanted.record)
        active = self.registry.active()
        assert active is not None
        return active

    def _start(self, wanted: Space) -> Space:
        """Decide the active space at start-up, and begin or give up a switch as needed."""
        active = self._active_record(wanted)
        building = self.registry.building()
        if building is not None and building.id != wanted.id:
            self._give_up(building)  # the model changed again, or changed back
            building = None
        if active.id == wanted.id:
            return replace(wanted, record=active)
        self.target = replace(wanted, record=building or self._begin(wanted.record))
        logger.warning(
            "embedding model changed from %s to %s: re-embedding every file in the background; "
            "searches use %s until that is done",
            active.model_id,
            wanted.record.model_id,
            active.model_id,
        )
        return self._open(active)

    def _follow(self, wanted: Space) -> Space:
        """The active space as recorded, whatever these settings name (a CLI command run
        with other settings than the server's must not start or stop a switch)."""
        active = self._active_record(wanted)
        if active.id == wanted.id:
            return replace(wanted, record=active)
        logger.warning(
            "these settings name the embedding model %s, but this data dir's active one is %s: "
            "using %s. Start `citewell serve` with these settings to switch models.",
            wanted.record.model_id,
            active.model_id,
            active.model_id,
        )
        return self._open(active)

    def _begin(self, record: SpaceRecord) -> SpaceRecord:
        """Record the new space as building and queue one re-embed job per file."""
        batch = self.jobs.new_id()
        if self.registry.add(replace(record, state=BUILDING, batch_id=batch)):
            entries = [(self.jobs.new_id(), f.name, f.id) for f in self.catalog.list_files()]
            self.jobs.enqueue(
                "",
                entries,
                self.settings.jobs.job_max_attempts,
                operation="reembed",
                batch_id=batch,
            )
        building = self.registry.building()  # ours, or another process's of the same model
        assert building is not None and building.id == record.id
        return building

    def _give_up(self, building: SpaceRecord) -> None:
        logger.warning("giving up the switch to %s", building.model_id)
        self.registry.retire(building.id)
        self.jobs.cancel_batch(building.batch_id)

    # --- the switch -----------------------------------------------------------------
    @property
    def switching(self) -> bool:
        """True while this process builds a new space (and so runs re-embed jobs)."""
        return self.target is not None

    def status(self) -> SwitchStatus | None:
        if self.target is None:
            return None
        return SwitchStatus(self.target.record, self.jobs.counts(self.target.record.batch_id))

    def reembed(self, jobs: Sequence[Job]) -> None:
        """Run re-embed jobs: the files' chunks, read from the active space, embedded by the
        new model into the new space. A job of a switch given up is cancelled."""
        target = self.target
        current = [j for j in jobs if target is not None and j.batch_id == target.record.batch_id]
        for job in jobs:
            if job not in current:
                self.jobs.cancel(job.id)
        if target is None or not current:
            return
        for job in current:
            self.jobs.advance(job.id, "embedding", job.claim)
        self._copy(tuple(job.key for job in current), target)
        for job in current:
            self.jobs.succeed(job.id, job.key, job.claim)

    def _copy(self, file_ids: tuple[str, ...], target: Space) -> None:
        """The files' chunks (and sentence pairs) as the active space holds them, embedded
        into ``target``."""
        where = ChunkFilter(file_ids=file_ids)
        chunks = scanning(self.active.store).scan(where)
        pairs = scanning(self.active.sentences).scan(where)
        texts = self._embed_texts(chunks) + [p.text for p in pairs]  # pairs: as they are
        vectors = target.embedder.embed(texts, "document") if texts else np.zeros((0, 0))
        rows = [with_vector(c, v) for c, v in zip([*chunks, *pairs], vectors, strict=True)]
        target.writer.delete(where)  # none left for a deleted file
        target.writer.upsert(rows[: len(chunks)], rows[len(chunks) :])

    def _embed_texts(self, chunks: Sequence[StoredChunk]) -> list[str]:
        """The chunks as they were embedded: heading path or title, and what the LLM wrote
        about them (from the context cache; no LLM call)."""
        texts = []
        for file_id, group in groupby(chunks, key=lambda c: c.file_id):
            part = list(group)
            record = self.catalog.get_file(file_id)
            title, text_sha = (record.title, record.text_sha256) if record else ("", "")
            enrichment = stored_enrichment(self.contexts, text_sha, [c.text for c in part])
            texts += [
                embed_text(c.text, c.headings, title, enrichment.prefix(i))
                for i, c in enumerate(part)
            ]
        return texts

    def finish(self) -> bool:
        """Make the new space active if every re-embed job is done; True if it switched."""
        status = self.status()
        if status is None or status.stalled or status.jobs.get("indexed", 0) != status.total:
            return False
        target = self.target
        assert target is not None
        self._catch_up(target)  # most of what changed meanwhile, ingestion still running
        target.writer.optimize()  # indexes built before the first query arrives
        with self.lock:
            self._catch_up(target)  # the rest, with ingestion paused
            self.registry.activate(target.id)
            self._use(target)
        logger.info("embedding space %s (%s) is now active", target.id, target.record.model_id)
        return True

    def _catch_up(self, target: Space) -> None:
        """Make ``target`` hold what the active space holds, file by file."""
        old, new = scanning(self.active.store).manifest(), scanning(target.store).manifest()
        gone = [f for f in new if f not in old]
        for i in range(0, len(gone), 500):
            target.writer.delete(ChunkFilter(file_ids=tuple(gone[i : i + 500])))
        stale = [f for f, chunks in old.items() if new.get(f) != chunks]
        for i in range(0, len(stale), COPY_FILES):
            self._copy(tuple(stale[i : i + COPY_FILES]), target)

    def _use(self, space: Space) -> None:
        self.active = replace(space, record=replace(space.record, state=ACTIVE))
        self.target = None
        if self._serving:  # the new space's searches start here now
            self.warm_searches()

    def refresh(self) -> None:
        """Follow a switch another process made (checked at most once a second)."""
        now = time.monotonic()
        if now - self._checked < REFRESH_EVERY:
            return
        self._checked = now
        record = self.registry.active()
        if record is None or record.id == self.active.id:
            return
        if not self.lock.acquire(blocking=False):
            return  # an ingest runs here: a search never waits on it; next time, then
        try:
            target = self.target
            space = target if target is not None and target.id == record.id else None
            self._use(space or self._open(record))
        finally:
            self.lock.release()

    def drop_retired(self) -> None:
        """Drop the tables (and cached vectors) of spaces retired over DROP_AFTER ago."""
        in_use = {self.active.record.model_id} | (
            {self.target.record.model_id} if self.target else set()
        )
        for record in self.registry.retired():
            if time.time() - record.changed_at < DROP_AFTER:
                continue
            for table in (record.id, sentence_table(record.id)):
                drop_store(open_chunk_store(self.settings, table, record.dimension))
            if record.model_id not in in_use:
                self.cache.forget(record.model_id)
            self.registry.forget(record.id)
            logger.info("dropped the retired embedding space %s", record.id)
