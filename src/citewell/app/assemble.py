"""The parts a Citewell is made of, built from the settings in one place (the library
object's ``from_settings``): the catalog, the embedding spaces, the live settings, the
retriever, the stored files, the LLM and the document reader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from citewell.auth.accounts import Accounts
from citewell.auth.audit import AuditLog
from citewell.blobs.registry import open_file_store
from citewell.catalog import Catalog
from citewell.catalog.runtime import RuntimeSettingsStore
from citewell.catalog.storage import FileStorage
from citewell.config import Settings
from citewell.db import open_engine
from citewell.embedders import DatabaseEmbeddingCache, Embedder, EmbeddingCache
from citewell.jobs import JobStore
from citewell.jobs.turns import TurnLock
from citewell.live_settings import LiveSettings, needs_llm, retrieval_settings
from citewell.llm.base import LLM
from citewell.llm.measured import measured
from citewell.llm.registry import build_llm, llm_configured
from citewell.operations.spaces import EmbeddingSpaces
from citewell.retrieval import HybridRetriever
from citewell.tracing import start_tracing


def live_settings_alone(settings: Settings) -> tuple[LiveSettings, AuditLog]:
    """The settings admins change at run time, and the audit trail, for commands that
    change them without loading a model (running servers pick a change up)."""
    engine = open_engine(settings)
    check = partial(needs_llm, llm_configured(settings))
    return LiveSettings(settings, RuntimeSettingsStore(engine), validate=check), AuditLog(engine)


@dataclass(frozen=True)
class Parts:
    live: LiveSettings
    catalog: Catalog
    storage: FileStorage
    spaces: EmbeddingSpaces
    retriever: HybridRetriever
    llm: LLM | None
    accounts: Accounts

    @classmethod
    def build(
        cls,
        settings: Settings,
        embedder: Embedder | None,
        previous: Sequence[Embedder],
        switch_models: bool,
        llm: LLM | None,
    ) -> Parts:
        """See ``Citewell.from_settings`` for the arguments."""
        data_dir = settings.storage.data_dir
        server = settings.server
        start_tracing(server.otel_endpoint, server.otel_traces_endpoint, server.trace_content)
        catalog = Catalog(open_engine(settings))
        cache = (
            DatabaseEmbeddingCache(catalog.engine)
            if settings.storage.database_url
            else EmbeddingCache(data_dir / "embeddings.sqlite")
        )
        jobs = JobStore(catalog.engine, settings.jobs.job_lease_seconds)
        lock = TurnLock()  # uploads are not held back behind the job queue
        spaces = EmbeddingSpaces(
            settings, catalog, jobs, cache, lock, embedder, previous, switch_models
        )
        llm = measured(llm if llm is not None else build_llm(settings))  # counted for /metrics
        live = LiveSettings(
            settings,
            RuntimeSettingsStore(catalog.engine),
            validate=partial(needs_llm, llm is not None),
        )
        retriever = HybridRetriever(
            None,
            None,
            retrieval_settings(settings),
            current=lambda: spaces.active.search_space,
            ranking=lambda: live.current.ranking,
        )
        storage = FileStorage(open_file_store(settings))
        return cls(live, catalog, storage, spaces, retriever, llm, Accounts.on(catalog.engine))
