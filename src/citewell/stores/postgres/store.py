"""The server-mode chunk store: PostgreSQL with pgvector, and BM25 computed in SQL.

One table of chunks per embedding space (the same rows as the embedded store, plus each
chunk's term count), with a GIN index over the terms, document frequencies and a one-row
statistics table beside it (stores/postgres/bm25.py: Okapi BM25 scored as the embedded store
scores it, not ``ts_rank``). The access filter is part of every query. Vectors: an HNSW
index (cosine), searched with pgvector's iterative scan so a filter still fills the top k;
under a filter that keeps at most EXACT_ROWS rows, vectors are compared exactly over those
rows instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from citewell.db.change_listener import ChangeListener
from citewell.db.changes import change_counter
from citewell.errors import StoreError
from citewell.stores.base import (
    FileChunks,
    IndexHealth,
    KbCopyStats,
    ReplicaState,
    SearchHit,
    TableCopyStats,
    manifest_of,
)
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.changes import ChangedCopy
from citewell.stores.memory.filter_counts import FilterCounts
from citewell.stores.memory.kb_copies import KbCopies
from citewell.stores.memory.keeper import SnapshotKeeper, copy_needed_mb
from citewell.stores.memory.scope_statistics import ScopeStatisticsCache
from citewell.stores.memory.shared_copy import SharedCopies
from citewell.stores.memory.snapshot import SnapshotSource, TableSnapshot
from citewell.stores.postgres.bm25 import FilterPlan, KeywordIndex
from citewell.stores.postgres.changes import ChangeLog
from citewell.stores.postgres.copy_rows import copy_stream
from citewell.stores.postgres.health import measured_recall
from citewell.stores.postgres.kb_copies import PostgresKbSource
from citewell.stores.postgres.schema import analyze_changed, create_tables, forget_table
from citewell.stores.postgres.snapshot import PostgresSnapshotSource
from citewell.stores.postgres.sql import (
    copy_in,
    ef_search,
    filter_sql,
    parse_vector,
    set_local,
    vector_binary,
    vector_literal,
)
from citewell.stores.rows import ROW_COLUMNS, to_chunk
from citewell.types import ChunkFilter, StoredChunk

ROWS = ", ".join(f'"{c}"' for c in ROW_COLUMNS)  # what get returns; scan adds terms
TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,50}$")
# A filter keeping at most this many rows (and under half the table) is searched from its
# rows: vectors compared exactly instead of walking the HNSW graph, keyword candidates
# checked against the rows in memory instead of by a lookup each.
EXACT_ROWS = 20_000


class PostgresChunkStore:
    """``memory_rows``: below this many chunks searches and row reads use an in-memory
    snapshot of the table (postgres_snapshot), checked against the table's version first.
    A bigger table is copied into memory too within ``table_copy_mb`` (as the embedded
    store does), its vectors under an IVF index; with ``copies_dir`` that copy is the
    machine's one, shared by its processes (memory/shared_copy.py)."""

    def __init__(  # noqa: PLR0913 - the copy's budget and place come from the settings
        self,
        engine: Engine,
        table: str,
        dimension: int,
        memory_rows: int = 0,
        table_copy_mb: int = 0,
        copies_dir: Path | None = None,
        memory_free: Callable[[], int | None] | None = None,
        replica: Engine | None = None,
        kb_copy_mb: int = 0,
    ) -> None:
        """``replica``: a streaming replica the copies of the table are read from;
        ``kb_copy_mb``: memory for copies of single KBs of fewer than ``memory_rows``
        chunks of a bigger table (memory/kb_copies.py)."""
        if not TABLE_NAME.match(table):
            raise StoreError(f"{table!r} is not a usable table name.")
        self.engine, self.table, self.dimension = engine, table, dimension
        self.stats = f"{table}_stats"
        self.bm25 = KeywordIndex(table)
        self.changes = ChangeLog(table)
        self._counts: FilterCounts[ChunkFilter] = FilterCounts(self.count)
        with engine.begin() as db:
            create_tables(db, table, dimension, self.bm25)
        counter = change_counter(engine)
        listener = counter if isinstance(counter, ChangeListener) else None
        self._source = PostgresSnapshotSource(
            engine, table, self.stats, dimension, listener, replica
        )
        source: SnapshotSource = self._source
        self._shared: SharedCopies | None = None
        if copies_dir is not None:
            source = self._shared = SharedCopies(source, copies_dir / table)
        self._memory_rows, self._table_copy_mb = memory_rows, table_copy_mb
        # the copies' vector index, as the embedded store's ``vector_index`` names its own
        self.vector_index = VectorIndexPolicy(min_rows=memory_rows)
        self._snapshots = SnapshotKeeper.of_table(
            source, memory_rows, table_copy_mb, dimension, self._shared is not None,
            check_interval=0.0, index=self.vector_index,
            memory_free=memory_free,
        )  # fmt: skip
        self._scopes = ScopeStatisticsCache(self._scope_terms)
        kb_source = PostgresKbSource(self._source, memory_rows)
        self._kb_copies = KbCopies(kb_source, kb_copy_mb << 20, check_interval=0.0)
        self._big: tuple[int, bool] = (-1, False)  # (version, at or above memory_rows)

    def table_copy(self, recall_samples: int = 0) -> TableCopyStats:
        """This process's in-memory copy of the whole big table (``table_copy_mb``)."""
        needed = self.table_copy_needed_mb()
        return self._snapshots.big_copy_stats(self._table_copy_mb, needed, recall_samples)

    def replica_state(self) -> ReplicaState | None:
        """Where the replica the copies are read from stands (None: there is none)."""
        return self._source.replica_state()

    def table_copy_needed_mb(self) -> float:
        return copy_needed_mb(
            self.count(ChunkFilter()), self._memory_rows, self.dimension, self._shared is not None
        )

    def kb_copies(self) -> KbCopyStats:
        """This process's in-memory KB copies (``kb_snapshot_mb``) and what they served."""
        return self._kb_copies.stats()

    def _changed(self) -> None:
        self._kb_copies.changed()
        self._snapshots.changed()
        self._scopes.changed()
        self._counts.forget()  # "the filter keeps every row" must not outlive a write

    def _scope_terms(self, where: ChunkFilter) -> pa.Array:
        """The terms of the rows a filter keeps (scope_statistics counts them)."""
        condition, params = filter_sql(where, "c")
        with self.engine.connect() as db:
            found = db.execute(
                text(f"SELECT c.terms FROM {self.table} c WHERE {condition}"), params
            )
            return pa.array([terms for (terms,) in found], type=pa.string())

    # --- writes -----------------------------------------------------------------------
    def upsert(self, chunks: Sequence[StoredChunk]) -> int:
        if not chunks:
            return 0
        unique = list({c.id: c for c in chunks}.values())
        for chunk in unique:
            if chunk.vector is None:
                raise StoreError(f"Chunk {chunk.id} has no vector.")
        self._write(unique, (vector_binary(c.vector or ()) for c in unique))
        return len(chunks)

    def upsert_matrix(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> int:
        """``upsert`` with ``vectors[i]`` as the vector of ``chunks[i]`` (citewell import)."""
        if not chunks:
            return 0
        last = list({c.id: i for i, c in enumerate(chunks)}.values())  # as upsert keeps
        self._write([chunks[i] for i in last], (vector_binary(vectors[i]) for i in last))
        return len(chunks)

    def _write(self, unique: Sequence[StoredChunk], vectors: Iterable[bytes]) -> None:
        """Chunks of distinct ids, with their vectors in pgvector's binary form."""
        lengths = [len(c.terms.split()) for c in unique]
        with self.engine.begin() as db:
            self._remove(db, "id = ANY(CAST(:ids AS text[]))", {"ids": [c.id for c in unique]})
            # COPY, not INSERT: executemany made ingestion 4x slower than the embedded store's
            copy_in(db, self.table, copy_stream(unique, lengths, vectors))
            self.bm25.count_terms(db, [c.terms for c in unique])
            files = {c.file_id for c in unique}
            self.changes.written(db, len(unique), sum(lengths), files)
        self._changed()

    def _remove(self, db: Connection, condition: str, params: dict[str, Any]) -> int:
        """Delete matching chunks, and keep the statistics and document frequencies. Writers
        take turns on the statistics row first: two processes upserting the same chunk
        would otherwise both find nothing to delete and collide on insert."""
        db.execute(text(f"SELECT 1 FROM {self.stats} FOR UPDATE"))
        gone = db.execute(
            text(
                f"WITH gone AS (DELETE FROM {self.table} WHERE {condition} "
                f"RETURNING id, length, file_id, terms){self.bm25.forget_terms('gone')} "
                "SELECT id, length, file_id FROM gone"
            ),
            params,
        ).all()
        if gone:
            files = {r.file_id for r in gone}
            self.changes.written(db, -len(gone), -sum(int(r.length) for r in gone), files)
        return len(gone)

    def _rows(self, db: Connection) -> tuple[int, int]:
        """The table's rows and version."""
        found = db.execute(text(f"SELECT chunks, version FROM {self.stats}")).one()
        return int(found.chunks), int(found.version)

    def delete(self, where: ChunkFilter) -> int:
        if where == ChunkFilter():  # no restriction (a field added later restricts)
            raise StoreError("Refusing to delete without a filter.")
        condition, params = filter_sql(where)
        with self.engine.begin() as db:
            removed = self._remove(db, condition, params)
        self._changed()
        return removed

    def link_files(self, file_ids: Sequence[str], kb_id: str, within: str | None = None) -> None:
        condition = "NOT (:kb = ANY(kb_ids))"
        if within is not None:
            condition += " AND :within = ANY(kb_ids)"
        with self.engine.begin() as db:
            self._set_kbs(
                db, "array_append(kb_ids, CAST(:kb AS text))", condition, file_ids, kb_id, within
            )
        self._changed()

    def unlink(self, file_id: str, kb_id: str) -> None:
        with self.engine.begin() as db:
            self._set_kbs(
                db, "array_remove(kb_ids, CAST(:kb AS text))", ":kb = ANY(kb_ids)", [file_id], kb_id
            )
            self._remove(db, "file_id = :file AND cardinality(kb_ids) = 0", {"file": file_id})
        self._changed()

    def _set_kbs(
        self,
        db: Connection,
        value: str,
        condition: str,
        file_ids: Sequence[str],
        kb_id: str,
        within: str | None = None,
    ) -> None:
        db.execute(text(f"SELECT 1 FROM {self.stats} FOR UPDATE"))
        db.execute(
            text(
                f"UPDATE {self.table} SET kb_ids = {value} "
                f"WHERE file_id = ANY(:files) AND {condition}"
            ),
            {"files": list(file_ids), "kb": kb_id, "within": within},
        )
        self.changes.written(db, 0, 0, file_ids)

    # --- searches ---------------------------------------------------------------------
    def _snapshot_for(self, where: ChunkFilter) -> TableSnapshot | ChangedCopy | None:
        """What in memory answers a search with this filter: a copy of its KBs when the
        table is big and they are few of it, else the table's snapshot or copy; None:
        search in SQL."""
        return self._kb_copy(where) or self._snapshots.current()

    def _kb_copy(self, where: ChunkFilter) -> TableSnapshot | None:
        if not where.kb_ids or not self._kb_copies.enabled or not self._big_table():
            return None
        return self._kb_copies.current(where.kb_ids)

    def _big_table(self) -> bool:
        """At or above ``memory_rows`` (counted again once the version moves)."""
        version = self._source.version()  # from memory until a notification moves it
        if self._big[0] != version:
            self._big = (version, 0 < self._memory_rows <= self._source.count_rows())
        return self._big[1]

    def vector_search(self, vector: Sequence[float], k: int, where: ChunkFilter) -> list[SearchHit]:
        snapshot = self._snapshot_for(where)
        if snapshot is not None:
            ranked = snapshot.search(vector, k, where)
            return [SearchHit(cid, score, i) for i, (cid, score) in enumerate(ranked)]
        condition, params = filter_sql(where)
        with self.engine.begin() as db:
            rows, _kept, plan = self._plan(db, where)
            # A filter that keeps few rows is searched exactly, from the rows the KB index
            # finds: the graph would have to be walked far (and every step checked against
            # the filter) to fill the top k, at a million chunks for 1 % of them 0.79 recall.
            # Otherwise keep scanning the graph until k rows pass the filter (pgvector
            # >= 0.8), in relaxed order and sorted after: strict order cost 30-45 ms a
            # search at a million chunks, relaxed 4-6; a bigger graph needs a wider beam.
            settings = {"max_parallel_workers_per_gather": "0"}
            if plan == "few":
                settings["enable_indexscan"] = "off"
            else:
                settings["hnsw.iterative_scan"] = "relaxed_order"
                settings["hnsw.ef_search"] = str(ef_search(rows, k))
            set_local(db, settings)
            found = db.execute(
                text(
                    f"WITH near AS MATERIALIZED (SELECT id, vector <=> CAST(:q AS vector) AS d "
                    f"FROM {self.table} WHERE {condition} ORDER BY d LIMIT :k) "
                    "SELECT id, 1 - d AS score FROM near ORDER BY d, id"
                ),
                {**params, "q": vector_literal(vector), "k": k},
            ).all()
        return [SearchHit(r.id, float(r.score), i) for i, r in enumerate(found)]

    def keyword_search(self, terms: str, k: int, where: ChunkFilter) -> list[SearchHit]:
        words = terms.split()
        if not words:
            return []
        snapshot = self._snapshot_for(where)
        if snapshot is not None:
            ranked = snapshot.keyword_search(words, k, where)
            return [SearchHit(cid, score, i) for i, (cid, score) in enumerate(ranked)]
        condition, params = filter_sql(where, "c")
        with self.engine.begin() as db:
            set_local(db, {"max_parallel_workers_per_gather": "0"})
            rows, kept, plan = self._plan(db, where)
            # Scored with the statistics of the rows the caller may read, never the table's.
            scope = self._scopes.get(where) if kept < rows else None
            found = self.bm25.search(db, words, k, condition, params, plan, scope)
        return [SearchHit(r.id, float(r.score), i) for i, r in enumerate(found)]

    def _plan(self, db: Connection, where: ChunkFilter) -> tuple[int, int, FilterPlan]:
        """The table's rows, the rows this filter keeps (counted at most every 30 s), and
        how a search should apply it: "all" (no filter), "most" (it keeps at least half
        the table), "few" (at most EXACT_ROWS rows and under half) or "some"."""
        rows, version = self._rows(db)
        if where == ChunkFilter():  # no restriction (a field added later restricts)
            return rows, rows, "all"
        kept = self._counts(where, rows, version)
        if rows and kept >= rows / 2:
            return rows, kept, "most"
        return rows, kept, "few" if kept <= EXACT_ROWS else "some"

    # --- reads ------------------------------------------------------------------------
    def get(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        if not chunk_ids:
            return []
        snapshot = self._snapshots.current()
        if snapshot is not None:
            by_id = snapshot.get(chunk_ids)
        else:
            found = self._select("id = ANY(CAST(:ids AS text[]))", {"ids": list(chunk_ids)}, "")
            by_id = {c.id: c for c in found}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def _select(
        self, condition: str, params: dict[str, Any], extra: str = ", terms"
    ) -> list[StoredChunk]:
        with self.engine.connect() as db:
            rows = db.execute(
                text(
                    f"SELECT {ROWS}{extra} FROM {self.table} WHERE {condition} "
                    "ORDER BY file_id, idx"
                ),
                params,
            ).all()
        return [to_chunk(dict(r._mapping)) for r in rows]

    def vectors(self, chunk_ids: Sequence[str]) -> list[list[float]]:
        """The stored vectors of these chunks (checks after a move)."""
        with self.engine.connect() as db:
            rows = db.execute(
                text(f"SELECT vector::text FROM {self.table} WHERE id = ANY(CAST(:ids AS text[]))"),
                {"ids": list(chunk_ids)},
            ).scalars()
            return [parse_vector(v) for v in rows]

    def count(self, where: ChunkFilter) -> int:
        if where == ChunkFilter():  # no restriction (a field added later restricts)
            # the statistics row, kept by every write: count(*) read the whole table, 20-40 s
            # at ten million rows, for each GET /api/v1/stats/store and citewell check
            return self._source.count_rows()
        condition, params = filter_sql(where)
        with self.engine.connect() as db:
            return int(
                db.execute(
                    text(f"SELECT count(*) FROM {self.table} WHERE {condition}"), params
                ).scalar_one()
            )

    def file_ids(self) -> set[str]:
        return set(self.chunk_counts())

    def chunk_counts(self) -> dict[str, int]:
        query = f"SELECT file_id, count(*) FROM {self.table} GROUP BY file_id"
        with self.engine.connect() as db:
            return {str(f): int(n) for f, n in db.execute(text(query))}

    def scan(self, where: ChunkFilter) -> list[StoredChunk]:
        condition, params = filter_sql(where)
        return self._select(condition, params)

    def manifest(self) -> dict[str, FileChunks]:
        with self.engine.connect() as db:
            rows = db.execute(text(f"SELECT id, file_id, kb_ids FROM {self.table}"))
            return manifest_of((c, f, k) for c, f, k in rows)

    # --- health (the optional ReportsIndexHealth capability) --------------------------
    def health(self, recall_samples: int = 20) -> IndexHealth:
        """Rows, and the HNSW index's recall@50 against an exact search, measured with the
        vectors of evenly spread stored chunks as queries. PostgreSQL's indexes have no
        segments to report."""
        rows = self.count(ChunkFilter())
        recall, asked = None, 0
        if recall_samples and rows:
            batches, search = self._source.column_batches, self.vector_search
            recall, asked = measured_recall(
                self.engine, self.table, batches, search, recall_samples
            )
        return IndexHealth(
            rows=rows,
            vector_index="pgvector HNSW (cosine)",
            recall_at_50=recall,
            recall_samples=asked,
        )

    def rebuild_vector_index(self) -> None:
        """Build the HNSW index anew (``citewell check --repair`` on low recall)."""
        with self.engine.connect() as db:
            db.execution_options(isolation_level="AUTOCOMMIT").execute(
                text(f"REINDEX INDEX {self.table}_hnsw")
            )

    def drop(self) -> None:
        with self.engine.begin() as db:
            for name in (self.bm25.df, self.stats, f"{self.table}_changes"):
                db.execute(text(f"DROP TABLE IF EXISTS {name}"))
            db.execute(text(f"DROP TABLE IF EXISTS {self.table}"))
            forget_table(db, self.table)
        self._snapshots.dropped()
        self._kb_copies.clear()
        if self._shared is not None:
            self._shared.clear()  # a table made anew under the name starts at version 1
        self._changed()

    def optimize(self) -> None:
        """PostgreSQL keeps its indexes current on every write; refresh the planner's
        statistics of the tables that changed by a tenth since they were last counted (so
        filters and joins keep good plans as a table grows from empty). ANALYZE samples
        each table whatever its size: after every ingested batch it cost seconds at a
        million chunks, for statistics that had barely moved."""
        analyze_changed(self.engine, [self.table, self.bm25.df, self.stats])
        self.changes.prune(self.engine)
