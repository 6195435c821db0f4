"""The chunk store role: chunks, their vectors and their BM25 terms, searched with filters.

``ChunkStore`` is what every backend must do; scanning, index upkeep and dropping are
optional capabilities (small protocols below) that the pipeline checks for. Every backend
passes ``citewell.testing.conformance.ChunkStoreConformance`` unchanged (and
``ScanConformance`` when it scans). Filters are applied inside the store's own query,
never before or after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from citewell.errors import StoreError
from citewell.types import ChunkFilter, StoredChunk

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class SearchHit:
    """A chunk found by one retriever: its id, score (higher is better) and rank, from 0.

    Searches return ids only; the retriever fetches the rows it keeps with ``get``, so a
    query reads the text of a handful of chunks, not of every candidate.
    """

    chunk_id: str
    score: float
    rank: int


@dataclass(frozen=True)
class FileChunks:
    """What a store holds of one file: its chunk ids and the KBs they belong to. Two stores
    agree on a file when these are equal (chunk ids are content hashes)."""

    chunk_ids: frozenset[str]
    kb_ids: frozenset[str]


@runtime_checkable
class ChunkStore(Protocol):
    dimension: int

    def upsert(self, chunks: Sequence[StoredChunk]) -> int:
        """Insert or replace chunks by id; each carries its vector. Returns how many."""
        ...

    def delete(self, where: ChunkFilter) -> int:
        """Delete every chunk matching ``where``; returns how many went."""
        ...

    def link_files(self, file_ids: Sequence[str], kb_id: str, within: str | None = None) -> None:
        """Make the files' chunks part of a knowledge base too (no re-embedding), in one
        write however many files; with ``within``, only their chunks already in that KB (a
        file may have several chunk sets, one per chunking; see ``ingest.chunk_sets``)."""
        ...

    def unlink(self, file_id: str, kb_id: str) -> None:
        """Take a file's chunks out of one knowledge base; those then in no KB are deleted."""
        ...

    def vector_search(
        self, vector: Sequence[float], k: int, where: ChunkFilter
    ) -> list[SearchHit]: ...

    def keyword_search(self, terms: str, k: int, where: ChunkFilter) -> list[SearchHit]:
        """BM25 over the stored terms; ``terms`` come from ``citewell.retrieval.tokenize``."""
        ...

    def get(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        """Chunks by id, in the order asked, skipping unknown ids."""
        ...

    def count(self, where: ChunkFilter) -> int: ...

    def file_ids(self) -> set[str]:
        """Every file id that has at least one chunk (for consistency checks)."""
        ...


# --- optional capabilities: the pipeline checks for them with isinstance ------------------
@runtime_checkable
class ScansChunks(Protocol):
    """A store that can list what it holds: needed to move chunks into a new embedding
    space without re-parsing (a model switch) and to compare two spaces file by file."""

    def scan(self, where: ChunkFilter) -> list[StoredChunk]:
        """Every chunk matching ``where``, in file and chunk order, without vectors (to
        re-embed them into another embedding space)."""
        ...

    def manifest(self) -> dict[str, FileChunks]:
        """File id → its chunk ids and KB ids, for every file in the store."""
        ...


def manifest_of(rows: Iterable[tuple[str, str, Sequence[str] | None]]) -> dict[str, FileChunks]:
    """A ``manifest`` from every row's (chunk id, file id, KB ids)."""
    ids: dict[str, set[str]] = {}
    kbs: dict[str, set[str]] = {}
    for chunk_id, file_id, kb_ids in rows:
        ids.setdefault(file_id, set()).add(chunk_id)
        kbs.setdefault(file_id, set()).update(kb_ids or ())
    return {f: FileChunks(frozenset(ids[f]), frozenset(kbs[f])) for f in ids}


@runtime_checkable
class WarmsSearches(Protocol):
    """An optional capability: a store that can load what its searches read before the
    first one comes. Processes that serve searches ask for it at start; commands and job
    workers, which never search, do not pay for it (at a million chunks LanceDB's indexes
    took 1.3 GB and seconds of CPU to load)."""

    def warm_searches(self) -> None: ...


def warm_searches(store: ChunkStore) -> None:
    """Load what ``store``'s searches read now, in the background, where it can."""
    if isinstance(store, WarmsSearches):
        store.warm_searches()


@runtime_checkable
class ExportsChunks(Protocol):
    """A store that can hand out every chunk with its vector (``citewell migrate``)."""

    def export(self, batch: int = 5000) -> Iterator[list[StoredChunk]]: ...


@runtime_checkable
class OptimizesIndexes(Protocol):
    """A store whose indexes take recent writes in batches (LanceDB's deltas and
    compaction; PostgreSQL's planner statistics)."""

    def optimize(self) -> None:
        """Fold recent writes into the indexes; called after a batch of writes."""
        ...


@runtime_checkable
class DropsTables(Protocol):
    """A store that can remove itself when its embedding space is retired."""

    def drop(self) -> None:
        """Remove the whole store; it is unusable after."""
        ...


@runtime_checkable
class TrainsInBackground(Protocol):
    """A store that trains its vector index anew in a thread of the process that wrote
    (LanceDB). A process about to exit waits for it, or the training is lost and starts
    again at the next write."""

    def wait_for_training(self, timeout: float | None = None) -> bool:
        """Returns whether no training runs (any more)."""
        ...


def wait_for_training(store: ChunkStore, timeout: float | None = None) -> bool:
    """Wait for the store's training under way, if it trains in the background."""
    return store.wait_for_training(timeout) if isinstance(store, TrainsInBackground) else True


def optimize_store(store: ChunkStore) -> None:
    """Fold recent writes into the store's indexes, if it has any to fold."""
    if isinstance(store, OptimizesIndexes):
        store.optimize()


@runtime_checkable
class CountsChunks(Protocol):
    """A store that counts every file's chunks in one pass (``citewell check`` at millions
    of chunks: a count per file took hours)."""

    def chunk_counts(self) -> dict[str, int]:
        """Chunks a file, for every file with at least one."""
        ...


def chunks_per_file(store: ChunkStore) -> dict[str, int]:
    """Every file's chunks: in one pass where the store can, else a count per file."""
    if isinstance(store, CountsChunks):
        return store.chunk_counts()
    return {f: store.count(ChunkFilter(file_ids=(f,))) for f in store.file_ids()}


@runtime_checkable
class UpsertsMatrices(Protocol):
    """A store that takes a big write's vectors as one float32 matrix (``citewell import``:
    turning 384 floats a chunk into Python numbers and back cost more than the write)."""

    def upsert_matrix(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> int:
        """``upsert`` with ``vectors[i]`` as the vector of ``chunks[i]`` (theirs unused)."""
        ...


def upsert_matrix(store: ChunkStore, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> int:
    """Chunks with their vectors as one matrix: whole where the store takes it, else a tuple
    of floats a chunk."""
    if len(vectors) != len(chunks):
        raise StoreError(f"{len(chunks)} chunks came with {len(vectors)} vectors.")
    if isinstance(store, UpsertsMatrices):
        return store.upsert_matrix(chunks, vectors)
    return store.upsert(
        [replace(c, vector=tuple(v.tolist())) for c, v in zip(chunks, vectors, strict=True)]
    )


def scanning(store: ChunkStore) -> ScansChunks:
    """The store as one that can list its chunks, or a StoreError saying what to do."""
    if not isinstance(store, ScansChunks):
        raise StoreError(
            f"{type(store).__name__} cannot list its chunks, so they cannot be copied into "
            "another embedding space; re-ingest the files with the new model instead."
        )
    return store


@dataclass(frozen=True)
class IndexHealth:
    """What ``citewell check`` reports about one chunk table's indexes."""

    rows: int
    vector_index: str  # "exact (in memory)" or the index type
    trained_rows: int = 0
    partitions: int = 0
    training_rows: int = 0  # rows a training under way in the background trains on
    unindexed_rows: int = 0
    # Rows an index should hold by now and lacks: a write stopped before its upkeep
    # (``citewell check --repair`` folds them in).
    rows_behind: int = 0
    segments: dict[str, int] = field(default_factory=dict)
    recall_at_50: float | None = None  # ANN against exact search, on sampled stored vectors
    recall_samples: int = 0


@dataclass(frozen=True)
class KbCopyStats:
    """One process's in-memory copies of single KBs of a big table (either store), for
    ``GET /api/v1/stats/store``. The searches count vector and keyword halves apart, and
    only those in KBs small enough for a copy: many from the table after the server has
    run a while mean the KBs searched do not fit in ``budget_mb``."""

    copies: int
    megabytes: float
    budget_mb: float
    made: int  # since start; more than copies: others were pushed out or set aside
    searches_from_copies: int
    searches_from_table: int


@dataclass(frozen=True)
class TableCopyStats:
    """One process's in-memory copy of a whole table at or above the ANN threshold
    (LanceDB, ``table_copy_mb``), for ``GET /api/v1/stats/store``. ``current``: it holds the
    table's latest version, so searches run on it; ``rows`` 0: none is held (too big for
    the budget, or being made after a write). ``needed_mb``: about what a copy of the table
    would take now (the ``table_copy_mb`` to set; 0 below the ANN threshold, where every
    table is searched from memory anyway). ``recall_at_50``: the copy's IVF index against
    an exact search over the copy, when samples were asked for. ``state``: why searches
    do or do not run on a copy: ``current``; ``not_needed`` (below vector_index_min_rows,
    searched from memory anyway); ``too_big`` (over table_copy_mb); ``waiting`` (written in
    the last 20 s, made once the table is quiet); ``copying``; ``put_off`` (less than twice
    its size free, tried again in a minute); ``failed`` (see the log; not again until a
    restart). ``shared``: the copy is mapped from files every API process of the machine
    maps (``table_copy_shared``), so the machine holds it once. ``changed_rows``: rows of
    files written since the copy was made, searched beside it (memory/changes.py).
    ``starting``: this process has had no copy yet and one is on its way (``waiting`` or
    ``copying``): ``/readyz`` answers 503 until it is current."""

    budget_mb: float
    needed_mb: float
    current: bool
    rows: int
    megabytes: float
    partitions: int
    recall_at_50: float | None = None
    recall_samples: int = 0
    state: str = "current"
    shared: bool = False  # mapped from the files the machine's processes share
    changed_rows: int = 0
    starting: bool = False


@dataclass(frozen=True)
class ReplicaState:
    """Where a streaming replica the copies are read from stands (``database_read_url``):
    the table's version on the primary, and on the replica (None: it does not answer)."""

    primary_version: int
    replica_version: int | None


@runtime_checkable
class ReadsAReplica(Protocol):
    """An optional capability: a store whose copies are read from a streaming replica."""

    def replica_state(self) -> ReplicaState | None:
        """None: no replica is configured."""
        ...


@runtime_checkable
class ReportsTableCopy(Protocol):
    """An optional capability: a store that keeps a whole big table in memory."""

    def table_copy(self, recall_samples: int = 0) -> TableCopyStats: ...

    def table_copy_needed_mb(self) -> float:
        """About what a copy of the table would take now (0: below the ANN threshold)."""
        ...


@runtime_checkable
class ReportsKbCopies(Protocol):
    """An optional capability: a store that keeps in-memory copies of single KBs."""

    def kb_copies(self) -> KbCopyStats: ...


@runtime_checkable
class ReportsIndexHealth(Protocol):
    """An optional capability: a store that can report its indexes (and their recall) and
    train its vector index anew; ``citewell check`` uses it when the store has it."""

    def health(self, recall_samples: int = 20) -> IndexHealth: ...

    def rebuild_vector_index(self) -> None: ...


# --- the one way to ask a store what it can do, and how it is ------------------------------
@dataclass(frozen=True)
class Capabilities:
    """What a chunk store can do beyond the ChunkStore protocol (each an optional protocol
    above). A store without one still works: what needs it says what to do instead."""

    scans: bool  # lists its chunks: a model switch copies them into the new space
    exports: bool  # hands out every chunk with its vector: ``citewell migrate``
    optimizes: bool  # folds recent writes into its indexes after a batch
    drops: bool  # removes its table when its embedding space is retired
    trains_in_background: bool  # a process about to exit waits for the training
    reports_index_health: bool  # ``citewell check`` reports (and repairs) its indexes
    keeps_kb_copies: bool  # in-memory copies of single KBs of a big table
    keeps_table_copy: bool  # an in-memory copy of a whole big table


def capabilities(store: object) -> Capabilities:
    """What ``store`` can do: the only place the optional protocols are probed."""
    return Capabilities(
        scans=isinstance(store, ScansChunks),
        exports=isinstance(store, ExportsChunks),
        optimizes=isinstance(store, OptimizesIndexes),
        drops=isinstance(store, DropsTables),
        trains_in_background=isinstance(store, TrainsInBackground),
        reports_index_health=isinstance(store, ReportsIndexHealth),
        keeps_kb_copies=isinstance(store, ReportsKbCopies),
        keeps_table_copy=isinstance(store, ReportsTableCopy),
    )


@dataclass(frozen=True)
class StoreReport:
    """How a chunk store is now; None for what it cannot report."""

    capabilities: Capabilities
    index: IndexHealth | None
    kb_copies: KbCopyStats | None
    table_copy: TableCopyStats | None


def report(store: ChunkStore, recall_samples: int = 0) -> StoreReport:
    """How ``store`` is: its indexes (with their measured recall@50 when ``recall_samples``
    > 0) and its in-memory copies, as far as it can tell."""
    return StoreReport(
        capabilities(store),
        index_health(store, recall_samples),
        store.kb_copies() if isinstance(store, ReportsKbCopies) else None,
        store.table_copy(recall_samples) if isinstance(store, ReportsTableCopy) else None,
    )


def replica_state_of(store: ChunkStore) -> ReplicaState | None:
    """Where the store's read replica stands, if it reads one."""
    return store.replica_state() if isinstance(store, ReadsAReplica) else None


def table_copy_of(store: ChunkStore) -> TableCopyStats | None:
    """The store's in-memory copy of its whole table, if it keeps one."""
    return store.table_copy(0) if isinstance(store, ReportsTableCopy) else None


def drop_store(store: ChunkStore) -> bool:
    """Remove a retired space's table, if the store can; whether it did."""
    if isinstance(store, DropsTables):
        store.drop()
        return True
    return False


def index_health(store: ChunkStore, recall_samples: int = 20) -> IndexHealth | None:
    """The store's report on its indexes alone (``report`` also asks for its copies)."""
    return store.health(recall_samples) if isinstance(store, ReportsIndexHealth) else None


def rebuild_vector_index(store: ChunkStore) -> bool:
    """Train the store's vector index anew, if it has one to train; whether it did."""
    if isinstance(store, ReportsIndexHealth):
        store.rebuild_vector_index()
        return True
    return False


def table_copy_needed_mb(store: ChunkStore) -> float | None:
    """About what an in-memory copy of the whole table would take now; None for a store
    that keeps no such copy."""
    return store.table_copy_needed_mb() if isinstance(store, ReportsTableCopy) else None


def exporting(store: ChunkStore) -> ExportsChunks | None:
    """The store as one that hands out its chunks with their vectors, or None."""
    return store if isinstance(store, ExportsChunks) else None
