"""How the chunk store is: what admins read at /api/v1/stats/store and ``citewell check``
prints, and whether this process is ready to serve. Each store reports what it can."""

from __future__ import annotations

from dataclasses import dataclass

from citewell.auth.access import Access
from citewell.catalog.totals import catalog_totals
from citewell.db.changes import change_counter
from citewell.engine.core import Engine
from citewell.errors import Forbidden
from citewell.jobs.census import queue_census
from citewell.metrics.exposition import Figures
from citewell.stores.base import (
    IndexHealth,
    KbCopyStats,
    ReplicaState,
    TableCopyStats,
    replica_state_of,
    report,
    table_copy_needed_mb,
    table_copy_of,
)
from citewell.stores.registry import table_copy_budget_mb
from citewell.types import ChunkFilter

__all__ = ["IndexHealth", "KbCopyStats", "ReplicaState", "StoreStats", "TableCopyStats"]


@dataclass(frozen=True)
class StoreStats:
    store: str  # the backend's class: LanceChunkStore, PostgresChunkStore
    rows: int
    index: IndexHealth | None  # None: the store cannot report its indexes
    kb_copies: KbCopyStats | None  # None: the store keeps none (a plug-in's)
    table_copy: TableCopyStats | None  # None: the store keeps none (a plug-in's, say)
    sentence_pairs: int  # rows of the table beside it (``sentence_vectors``)


def store_stats(app: Engine, access: Access, recall_samples: int = 0) -> StoreStats:
    """The active embedding model's chunk table (admins). ``recall_samples`` > 0 also
    measures the vector index's recall@50 (and the in-memory copy's) on that many vectors."""
    if not access.is_admin:
        raise Forbidden("Only admins may do this; ask one, or use an admin's API key.")
    store = app.store
    now = report(store, recall_samples)
    rows = now.index.rows if now.index is not None else store.count(ChunkFilter())
    pairs = app.spaces.active.sentences.count(ChunkFilter())
    return StoreStats(type(store).__name__, rows, now.index, now.kb_copies, now.table_copy, pairs)


@dataclass(frozen=True)
class TableCopyMemory:
    """What the in-memory copy of the big table takes, for ``citewell check``."""

    rows: int
    needed_mb: float
    per_million_mb: float
    budget_mb: int
    shared: bool  # one copy for the machine's API processes (table_copy_shared)


def table_copy_memory(app: Engine) -> TableCopyMemory | None:
    """None below the ANN threshold (every table is searched from memory anyway) and for
    stores that keep no copy."""
    needed = table_copy_needed_mb(app.store)
    if not needed:
        return None
    rows = app.store.count(ChunkFilter())
    per_million = needed * 1_000_000 / rows if rows else 0.0
    budget = table_copy_budget_mb(app.settings)
    return TableCopyMemory(
        rows, needed, per_million, budget, app.settings.storage.table_copy_shared
    )


def readiness(app: Engine) -> str:
    """Raises when the catalog or the chunk store does not answer; else whether this
    process keeps what requests read until the database says it changed ("on") or reads
    afresh ("off": on PostgreSQL, no change notifications reach it)."""
    app.catalog.find_kb("")
    app.store.count(ChunkFilter(kb_ids=()))
    counter = change_counter(app.catalog.engine)
    return "on" if counter is not None and counter.current() is not None else "off"


def replica_state(app: Engine) -> ReplicaState | None:
    """Where the streaming replica the chunk table's copies are read from stands (None:
    ``database_read_url`` is not set, or the store reads no replica)."""
    return replica_state_of(app.store)


def copy_on_its_way(app: Engine) -> str | None:
    """The state (``waiting``, ``copying``) of the whole table's copy while this process has
    had none yet and one is being made; None once it has one, or when it will not (too
    big, below the ANN threshold, put off for memory): a machine that starts serves from
    the balancer once its searches run at the copy's speed."""
    copy = table_copy_of(app.store)
    return copy.state if copy is not None and copy.starting else None


def server_figures(app: Engine) -> Figures:
    """What /metrics reads from the database at each scrape (counts only, no names)."""
    census = queue_census(app.catalog.engine)
    totals = catalog_totals(app.catalog.engine)
    return Figures(
        census.by_state,
        census.oldest_queued_seconds,
        totals.knowledge_bases,
        totals.files,
        totals.chunks,
    )
