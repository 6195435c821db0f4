"""The embedded chunk store: one LanceDB table per embedding space, in the data dir.

Vectors, a native full-text (BM25) index over pre-tokenised terms, and a ``kb_ids`` list
column so one copy of a file's chunks serves every knowledge base it belongs to.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from citewell.errors import StoreError
from citewell.stores.base import (
    FileChunks,
    IndexHealth,
    KbCopyStats,
    SearchHit,
    TableCopyStats,
    manifest_of,
)
from citewell.stores.columns import ChunkColumns
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.ann import ann_query
from citewell.stores.lance.journal import ChangeJournal
from citewell.stores.lance.kb_snapshots import LanceKbSource
from citewell.stores.lance.reads import LanceSnapshotSource, RowAddresses, scope_terms
from citewell.stores.lance.scratch import SCRATCH_FOLDER, BuildScratch
from citewell.stores.lance.search_table import (
    RENEW_AFTER_VERSIONS,
    SearchHandle,
    SearchTable,
)
from citewell.stores.lance.tables import connect, open_or_create, quote, where_sql
from citewell.stores.lance.upkeep import TableUpkeep, prewarm
from citewell.stores.lance.writes import (
    FOLD_KEYS_AFTER_ROWS,
    AbsentFiles,
    add_then,
    adding_no_files,
    column_rows,
    vector_matrix,
)
from citewell.stores.memory.changes import ChangedCopy
from citewell.stores.memory.filter_counts import FilterCounts
from citewell.stores.memory.kb_copies import KbCopies
from citewell.stores.memory.keeper import SnapshotKeeper, copy_needed_mb
from citewell.stores.memory.scope_statistics import SCOPED_DEPTH, ScopeStatisticsCache
from citewell.stores.memory.shared_copy import SharedCopies
from citewell.stores.memory.snapshot import SnapshotSource, TableSnapshot
from citewell.stores.rows import ROW_COLUMNS, to_chunk
from citewell.types import ChunkFilter, StoredChunk

WRITE_CACHE_MB = 64
LINK_BATCH = 500  # files named in one update (the SQL stays short)


class LanceChunkStore:
    def __init__(
        self,
        path: Path,
        table: str,
        dimension: int,
        vector_index: VectorIndexPolicy | None = None,
        cache_mb: int = 1024,
        renew_after_versions: int = RENEW_AFTER_VERSIONS,
        kb_snapshot_mb: int = 512,
        table_copy_mb: int = 0,
        memory_free: Callable[[], int | None] | None = None,
        copies_dir: Path | None = None,
    ):
        """``copies_dir``: where the copy of a big table is kept for every process of the
        machine to map (memory/shared_copy.py); None: each process holds its own."""
        path.mkdir(parents=True, exist_ok=True)
        self.dimension = dimension
        self._table_copy_mb = table_copy_mb
        self.vector_index = vector_index or VectorIndexPolicy()
        self._path, self._name, self._cache_mb = path, table, cache_mb
        # Writes and upkeep read few index pages: a small cache of their own.
        self._db, _ = connect(path, min(cache_mb, WRITE_CACHE_MB))
        self._write_lock = threading.Lock()
        self._unfolded = 0  # rows written since the id indexes last took new rows in
        self._absent = AbsentFiles()  # files the table has no row of, known without a look-up
        self._table = open_or_create(self._db, table, dimension)
        scratch = BuildScratch(path / SCRATCH_FOLDER)
        scratch.remove_dead()
        self._upkeep = TableUpkeep(self._table, self.vector_index, scratch, self._trained)
        self._addresses = RowAddresses(self._table.uri)
        self._counts: FilterCounts[str | None] = FilterCounts(self._table.count_rows)
        self._scopes = ScopeStatisticsCache(
            lambda where: scope_terms(self._table, where_sql(where))
        )
        # Counts of the version searches read: whether keyword scores need a scope of
        # their own must not rest on a count from before any process's write.
        self._fresh_counts: FilterCounts[tuple[str | None, int]] = FilterCounts(
            lambda key: int(self._search.table().count_rows(key[0]))
        )
        self._fts_ready = "terms" in self._upkeep.index_names()
        if self._fts_ready:
            with self._write_lock:  # a table from an older release may lack newer indexes
                self._upkeep.ensure_scalar_indexes()
        self._journal = ChangeJournal(path / f"{table}.changes")
        source: SnapshotSource = LanceSnapshotSource(
            self._table, dimension, self._journal, self._addresses.dataset
        )
        self._shared: SharedCopies | None = None
        if copies_dir is not None:
            source = self._shared = SharedCopies(source, copies_dir / table)
        # after _shared: warming the search table asks whether a saved copy will answer
        self._search = SearchTable(self._open_search_table, self._warm, renew_after_versions)
        self._snapshots = SnapshotKeeper.of_table(
            source, self.vector_index.min_rows, table_copy_mb, dimension,
            self._shared is not None, index=self.vector_index, memory_free=memory_free,
        )  # fmt: skip
        kb_source = LanceKbSource(
            self._addresses.dataset, lambda: int(self._table.version), dimension
        )
        self._kb_snapshots = KbCopies(kb_source, kb_snapshot_mb << 20)

    def _open_search_table(self) -> SearchHandle:
        connection, session = connect(self._path, self._cache_mb)
        table = connection.open_table(self._name)
        return SearchHandle(table, session, int(table.version))

    def warm_searches(self) -> None:
        self._search.warm()

    def _warm(self, table: Any) -> None:
        """Load the indexes LanceDB searches with, unless the machine's saved copy of the
        table will answer them (the cache would hold ~1.5 GB a million in every process)."""
        rows = table.count_rows()
        if rows < self.vector_index.min_rows:
            return
        copied = copy_needed_mb(rows, self.vector_index.min_rows, self.dimension, True)
        if self._shared is None or not self._shared.kept() or copied > self._table_copy_mb:
            prewarm(table)

    @property
    def cached_bytes(self) -> int:
        """What LanceDB's caches hold for searches of this table."""
        return self._search.cached_bytes

    # --- writes -----------------------------------------------------------------
    def upsert(self, chunks: Sequence[StoredChunk]) -> int:
        if not chunks:
            return 0
        return self.upsert_matrix(chunks, vector_matrix(chunks, self.dimension))

    def upsert_matrix(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> int:
        return self.upsert_columns(ChunkColumns.of(chunks), vectors)

    def upsert_columns(self, columns: ChunkColumns, vectors: np.ndarray) -> int:
        if not len(columns):
            return 0
        data, files = column_rows(columns, vectors, self.dimension), columns.file_id
        with self._write_lock:
            self._unfolded += len(columns)
            fold = self._unfolded >= FOLD_KEYS_AFTER_ROWS  # a long import, between optimizes
            upkeep = partial(self._index_upkeep, fold) if fold or not self._fts_ready else None
            write = partial(add_then, self._table, data, files, self._absent, upkeep)
            self._journal.record(files, write)  # add_then notes its files; others: _journaled
            if fold:
                self._unfolded = 0
        self._changed()
        return len(columns)

    def _journaled(self, files: Iterable[str] | None, write: Callable[[], object]) -> None:
        """``write``, which adds no rows (a delete, an update of rows' KBs), noted in the
        change journal with the files it touched (None: not known), so every process's copy
        of a big table takes it in (stores/lance/journal)."""
        self._journal.record(files, partial(adding_no_files, self._table, self._absent, write))

    def delete(self, where: ChunkFilter) -> int:
        predicate = where_sql(where)
        if predicate is None:
            raise StoreError("Refusing to delete without a filter.")
        with self._write_lock:
            before = self._table.count_rows()
            self._journaled(where.file_ids, lambda: self._table.delete(predicate))
            deleted = int(before - self._table.count_rows())
        self._changed()
        return deleted

    def link_files(self, file_ids: Sequence[str], kb_id: str, within: str | None = None) -> None:
        # One update per batch: each update rewrites the fragments it touches, so a link per
        # file cost ~90 ms at 300 files (benchmarks/link_stored.py).
        for start in range(0, len(file_ids), LINK_BATCH):
            listed = ", ".join(quote(f) for f in file_ids[start : start + LINK_BATCH])
            where = f"file_id IN ({listed}) AND NOT array_has(kb_ids, {quote(kb_id)})"
            if within is not None:
                where += f" AND array_has(kb_ids, {quote(within)})"
            values = {"kb_ids": f"array_append(kb_ids, {quote(kb_id)})"}
            with self._write_lock:
                self._journaled(
                    file_ids[start : start + LINK_BATCH],
                    partial(self._table.update, where=where, values_sql=values),
                )
        self._changed()

    def unlink(self, file_id: str, kb_id: str) -> None:
        def write() -> None:
            self._table.update(
                where=f"file_id = {quote(file_id)} AND array_has(kb_ids, {quote(kb_id)})",
                values_sql={"kb_ids": f"array_remove(kb_ids, {quote(kb_id)})"},
            )
            self._table.delete(f"file_id = {quote(file_id)} AND array_length(kb_ids) = 0")

        with self._write_lock:
            self._journaled([file_id], write)
        self._changed()

    # --- indexes ----------------------------------------------------------------
    def _index_upkeep(self, fold: bool) -> None:
        """Indexes from the first write on (keyword search works before any optimize); with
        ``fold``, the id indexes take the new rows in."""
        if not self._fts_ready:
            self._upkeep.ensure_scalar_indexes()
            self._fts_ready = True
        if fold:
            self._upkeep.fold_keys()

    def optimize(self) -> None:
        with self._write_lock:
            trained = self._upkeep.after_writes()
            self._unfolded = 0
        self._changed()
        if trained:  # searches move to a handle with the new index loaded
            self._search.renew()

    def _trained(self) -> None:
        """A training in the background has committed: searches move to the new index."""
        self._changed()
        self._search.renew()

    def wait_for_training(self, timeout: float | None = None) -> bool:
        """Wait for a training of the vector index under way in the background (tests,
        benchmarks, a CLI about to exit); returns whether none runs now."""
        return self._upkeep.wait_for_training(timeout)

    def rebuild_vector_index(self) -> None:
        """Train the vector index anew on every row (``citewell check --repair`` does this
        when the measured recall is low); writes go on meanwhile."""
        self._upkeep.wait_for_training()  # one under way: not while writes wait for the lock
        with self._write_lock:  # nothing may compact the rows the training reads first
            self._upkeep.start_training()
        self._upkeep.wait_for_training()
        if self._upkeep.training_failure is not None:
            raise StoreError(
                f"Training the vector index anew failed: {self._upkeep.training_failure}. "
                "Run the repair again; if it keeps failing, check the data dir's disk space."
            )
        self._changed()
        self._search.renew().join()

    def health(self, recall_samples: int = 20) -> IndexHealth:
        """Rows, index layout and (with samples) the vector index's recall@50 measured
        against exact search, for ``citewell check``."""
        return self._upkeep.health(recall_samples)

    def table_copy(self, recall_samples: int = 0) -> TableCopyStats:
        """This process's in-memory copy of the whole table (``table_copy_mb``)."""
        needed = self.table_copy_needed_mb()
        return self._snapshots.big_copy_stats(self._table_copy_mb, needed, recall_samples)

    def table_copy_needed_mb(self) -> float:
        return copy_needed_mb(
            self._counts(None), self.vector_index.min_rows, self.dimension, self._shared is not None
        )

    def kb_copies(self) -> KbCopyStats:
        """This process's in-memory KB copies (memory/kb_copies.py) and what they served."""
        return self._kb_snapshots.stats()

    # --- reads ------------------------------------------------------------------
    def vector_search(self, vector: Sequence[float], k: int, where: ChunkFilter) -> list[SearchHit]:
        snapshot = self._snapshot_for(where)
        if snapshot is not None:
            ranked = snapshot.search(vector, k, where)
            return [SearchHit(cid, score, i) for i, (cid, score) in enumerate(ranked)]
        rows_in, matching = self._counts(None), self._counts(where_sql(where))
        table = self._search.table()
        query = partial(ann_query, table, self.vector_index, vector, rows_in, matching)
        rows = self._run(query, k, where, "_distance")
        return [SearchHit(r["id"], 1.0 - float(r["_distance"]), i) for i, r in enumerate(rows)]

    def _snapshot_for(self, where: ChunkFilter) -> TableSnapshot | ChangedCopy | None:
        """What in memory answers a search with this filter: a small table's snapshot, a
        small KB's copy (faster than the whole big table's copy: a million-row mask and
        scores for a few thousand rows), or a big table's copy; None: read LanceDB."""
        return self._kb_snapshot(where) or self._current_snapshot()

    def _current_snapshot(self) -> TableSnapshot | ChangedCopy | None:
        """The in-memory snapshot, when the table is small and it holds the latest version."""
        return self._snapshots.current()

    def _kb_snapshot(self, where: ChunkFilter) -> TableSnapshot | None:
        """The in-memory copy of the filter's KBs, when the table is too large for a whole
        snapshot and those KBs hold few rows (memory/kb_copies.py)."""
        if not where.kb_ids or not self._kb_snapshots.enabled:
            return None
        if self._counts(None) < self.vector_index.min_rows:
            return None  # the whole table's snapshot is on its way
        rows = self._counts(where_sql(ChunkFilter(kb_ids=where.kb_ids)))
        if not 0 < rows < self.vector_index.min_rows:
            return None
        return self._kb_snapshots.current(where.kb_ids)

    def _changed(self) -> None:
        self._kb_snapshots.changed()
        self._snapshots.changed()
        self._addresses.forget()
        self._scopes.changed()
        self._search.latest()

    def keyword_search(self, terms: str, k: int, where: ChunkFilter) -> list[SearchHit]:
        if not terms.strip() or not self._fts_ready:
            return []
        snapshot = self._snapshot_for(where)
        if snapshot is not None:
            ranked = snapshot.keyword_search(terms.split(), k, where)
            return [SearchHit(cid, score, i) for i, (cid, score) in enumerate(ranked)]
        table = self._search.table()
        query = partial(table.search, terms, query_type="fts", fts_columns="terms")
        if not self._keeps_every_row(where):
            # The index scores with the whole table's statistics: score again with the scope's.
            found = query().where(where_sql(where), prefilter=True).select(["id", "terms"])
            rows = found.with_row_id(True).limit(max(SCOPED_DEPTH, 4 * k)).to_list()
            self._addresses.remember(rows)
            pairs = ((r["id"], r["terms"]) for r in rows)
            ranked = self._scopes.get(where).rank(terms.split(), pairs, k)
            return [SearchHit(cid, score, i) for i, (cid, score) in enumerate(ranked)]
        rows = self._run(query, k, where, "_score")
        return [SearchHit(r["id"], float(r["_score"]), i) for i, r in enumerate(rows)]

    def _run(
        self, query: Callable[[], Any], k: int, where: ChunkFilter, score: str
    ) -> list[dict[str, Any]]:
        """The best k rows of a search (``query()`` makes it) that the filter keeps."""
        rows = None
        if self._keeps_all(where):
            rows = self._unfiltered(query(), k, where, score)
            if rows is None:  # a stale count: recount, rather than search twice until it expires
                self._counts.forget()
        if rows is None:
            filtered, predicate = query(), where_sql(where)
            if predicate is not None:
                filtered = filtered.where(predicate, prefilter=True)
            rows = filtered.select(["id", score]).with_row_id(True).limit(k).to_list()
        self._addresses.remember(rows)
        return rows

    def _keeps_every_row(self, where: ChunkFilter) -> bool:
        """Whether the filter keeps every row of the version searches read now (no
        filter, or one counted at that version: a write of any process moves it)."""
        if where.kb_ids is None and where.file_ids is None:
            return True
        if not where.kb_ids or where.file_ids is not None:
            return False
        version = int(self._search.table().version)
        rows = self._fresh_counts((None, version))
        return rows > 0 and self._fresh_counts((where_sql(where), version)) == rows

    def _keeps_all(self, where: ChunkFilter) -> bool:
        """Whether the KB filter kept every row when last counted (one KB holding them all,
        or a caller who may read every KB)."""
        if not where.kb_ids or where.file_ids is not None:
            return False
        rows = self._counts(None)
        return rows > 0 and self._counts(where_sql(where)) == rows

    def _unfiltered(
        self, query: Any, k: int, where: ChunkFilter, score: str
    ) -> list[dict[str, Any]] | None:
        """The search without the filter, if every row it finds passes the filter: then they
        are the filtered search's rows too, found without building the filter's row set
        (about 6 of 47 ms a hybrid search at 1.5M chunks). The count may be up to COUNT_TTL
        old and miss other processes' writes, so each row is checked; None: search again."""
        rows = query.select(["id", score, "kb_ids"]).with_row_id(True).limit(k).to_list()
        wanted = set(where.kb_ids or ())
        return rows if all(wanted.intersection(r["kb_ids"] or ()) for r in rows) else None

    def get(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        if not chunk_ids:
            return []
        snapshot = self._current_snapshot()
        if snapshot is not None:
            by_id = snapshot.get(chunk_ids)
        else:
            copied = self._kb_snapshots.rows(chunk_ids)
            wanted = [i for i in chunk_ids if i not in copied]
            found = self._addresses.take(wanted, ROW_COLUMNS) if wanted else {}
            rest = [i for i in wanted if i not in found]
            if rest:
                ids = ", ".join(quote(i) for i in rest)
                table = self._search.table()
                query = table.search().where(f"id IN ({ids})").select(ROW_COLUMNS)
                found.update((r["id"], r) for r in query.limit(len(rest)).to_list())
            by_id = {**copied, **{i: to_chunk(r) for i, r in found.items()}}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def count(self, where: ChunkFilter) -> int:
        return int(self._table.count_rows(where_sql(where)))

    def file_ids(self) -> set[str]:
        return set(self.chunk_counts())

    def chunk_counts(self) -> dict[str, int]:
        column = self._table.search().select(["file_id"]).limit(None).to_arrow()["file_id"]
        counted = pc.value_counts(column.combine_chunks())
        return dict(zip(counted.field(0).to_pylist(), counted.field(1).to_pylist(), strict=True))

    def scan(self, where: ChunkFilter) -> list[StoredChunk]:
        query = self._table.search().select([*ROW_COLUMNS, "terms"])
        predicate = where_sql(where)
        if predicate is not None:
            query = query.where(predicate)
        chunks = [to_chunk(row) for row in query.limit(None).to_list()]
        return sorted(chunks, key=lambda c: (c.file_id, c.index))

    def export(self, batch: int = 5000) -> Iterator[list[StoredChunk]]:
        """Every chunk with its vector and terms, ``batch`` at a time (a move to another
        backend: nothing is embedded again)."""
        for rows in self._table.to_lance().to_batches(batch_size=batch):
            yield [
                replace(to_chunk(r), terms=r["terms"], vector=tuple(r["vector"]))
                for r in rows.to_pylist()
            ]

    def manifest(self) -> dict[str, FileChunks]:
        data = self._table.search().select(["id", "file_id", "kb_ids"]).limit(None).to_arrow()
        return manifest_of(zip(*data.to_pydict().values(), strict=True))

    def drop(self) -> None:
        with self._write_lock:
            self._db.drop_table(self._name)
            self._journal.path.unlink(missing_ok=True)
        self._kb_snapshots.clear()
        self._snapshots.dropped()  # no table left for the search handle to move to
        if self._shared is not None:
            self._shared.clear()  # a table made anew under the name starts at version 1
        self._addresses.forget()
