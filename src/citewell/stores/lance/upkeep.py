"""Keeping a LanceDB chunk table fast and its vector index accurate as it grows.

After each batch of writes (``LanceChunkStore.optimize``), at a cost that does not grow with
the table:

- the fragments no index covers yet (each upsert since the last call wrote one) are merged
  into one before the indexes take them in, so no index is re-mapped for them; other small
  fragments are compacted once many have gathered, into fragments of at most
  SMALL_FRAGMENT_ROWS, so no batch rewrites a big fragment;
- the full-text and scalar indexes get the new rows as a new *delta segment* once they lack
  ``index_delta_rows`` (LanceDB's plain ``optimize`` merges them into the whole full-text
  index: 3.4 s per 256-chunk batch at a million chunks; a delta still costs more in a
  bigger index). The vector index waits until the rows it lacks reach
  ``vector_delta_rows``. Past a million rows these two also wait for a share of the rows
  they hold (``VectorIndexPolicy.delta_rows``). Rows outside an index are searched flat
  meanwhile;
- an index with more than ``max_deltas`` deltas merges its newest ones of similar size
  (``newest_to_merge``): like a binary counter, each row
  is merged a logarithmic number of times and the segment count stays small. BM25 statistics
  are global across segments, so scores do not depend on the split (checked: identical);
- the vector index is trained anew when the table has doubled since it was trained, or when
  it was made with another layout or type (an older release's IVF-HNSW index): delta rows sit
  in partitions chosen by old centroids, which is how recall decayed to 0.73 at a million.
  Doubling keeps the total training work under twice that of one final build. The first
  training runs within the call, beside the other indexes' deltas; later ones in the
  background while writes go on (lance_training).

The vector index is IVF with 8-bit scalar quantisation and about sqrt(rows) partitions,
scanned flat; a query probes a share of them that grows as its filter keeps fewer rows
(``VectorIndexPolicy.nprobes``). Measured at a million SciFact copies against IVF-HNSW-SQ:
built in 62 s instead of 143-275 s, and 13-15 ms at recall@50 0.96-0.97 instead of 32-38 ms
(benchmarks/million.py, docs/benchmarks/journal.md).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from functools import partial
from typing import Any

from citewell.stores.base import IndexHealth
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.ann import measured_recall
from citewell.stores.lance.old_versions import OldVersions
from citewell.stores.lance.scratch import BuildScratch
from citewell.stores.lance.training import BackgroundTraining, TrainingRun, build_vector_index

log = logging.getLogger(__name__)

SCALAR_INDEXES = {"id": "btree", "file_id": "btree", "kb_ids": "labellist"}
SMALL_FRAGMENT_ROWS = 16_384
MAX_SMALL_FRAGMENTS = 16
DELETED_SHARE = 0.1
HARD_MAX_SEGMENTS = 32
# A merge is one sort-preserving merge that cannot spill, in Lance's 150 MB pool: the 153 key
# deltas of a ten-million-chunk import took more (journal, "Ten million chunks at once").
MERGE_AT_MOST = 32
INDEX_TYPE = "IvfSq"
UPKEEP_CACHE_BYTES = 1 << 20
TRAINING_SAMPLE_RATE = 64  # rows sampled per partition to train the vector index
VECTOR_INDEX_NAME = "vector_idx"  # what LanceDB names it


class TableUpkeep:
    """Index maintenance for one table; the caller holds the store's write lock."""

    def __init__(
        self,
        table: Any,
        policy: VectorIndexPolicy,
        scratch: BuildScratch,
        on_trained: Callable[[], None] | None = None,
    ) -> None:
        self.table = table
        self.policy = policy
        self.scratch = scratch  # where vector builds' shuffle files go, and are removed
        self._training = BackgroundTraining(on_trained)
        self.old_versions = OldVersions()  # removed hourly, beside the writes
        self._waiting: dict[str, int] = {}  # index name -> segment count with nothing to merge
        self._layouts: dict[str, tuple[int, int]] = {}  # base segment uuid -> vector_layout
        self._small_after = 0  # small fragments the last full compaction left

    def _dataset(self) -> Any:
        """A fresh handle on the table's latest version (LanceDB's own may lag a second).

        With small caches: upkeep gains nothing from caching, and with Lance's defaults
        every index statistics read and every full-text merge left an open file handle
        behind for the life of the process (about one per write batch, without bound)."""
        import lance

        return lance.dataset(
            self.table.uri,
            index_cache_size_bytes=UPKEEP_CACHE_BYTES,
            metadata_cache_size_bytes=UPKEEP_CACHE_BYTES,
        )

    # --- after writes -----------------------------------------------------------------
    def after_writes(self) -> bool:
        """Returns whether the vector index was trained anew."""
        rows = self.table.count_rows()
        if not rows:
            return False
        indexes = self._refresh()
        # New rows' fragments are merged when an index is about to take them in, not at
        # every call: at ten million rows each merge and its commit cost 0.03-0.05 s.
        merge_new = not indexes or any(self._delta_due(index) for index in indexes)
        self._compact(self._training.running, merge_new)
        self._refresh()
        self.ensure_scalar_indexes()
        trained = self._retrain_vectors(rows, beside=partial(self._add_deltas, vectors=False))
        # Also after a retraining: the other indexes still lack the new rows (skipping them
        # left 24,143 rows to a flat full-text scan: 160 ms a search at 60,000 chunks).
        training = self._training.running is not None
        self._add_deltas(vectors=not training)
        if not training:
            self.old_versions.remove_when_due(self._dataset)
        self._refresh()
        return trained

    def _compact(self, training: TrainingRun | None, merge_new: bool = True) -> None:
        """Merge the fragments no index covers yet (a flush's new rows) when ``merge_new``
        (an index is about to take them in): no index has to be re-mapped for them. Merge
        the other small fragments only once 16 more have gathered than the last such
        compaction left, or when many deleted rows
        (replaced and removed files) still take space and scan time: re-mapping the index
        segments over them cost 0.4-1.6 s a time at a million rows, and Lance merges only
        neighbours under the same segments, so it can leave many small ones behind.
        While a training runs, only fragments written since it began are merged."""
        dataset = self._dataset()
        if training is not None:
            if merge_new:
                self._compact_unindexed(dataset, after=training.last_fragment)
            return
        fragments = dataset.get_fragments()
        live = [f.count_rows() for f in fragments]
        small = sum(1 for rows in live if rows < SMALL_FRAGMENT_ROWS)
        deleted = sum(f.physical_rows for f in fragments) - sum(live)
        many_deleted = deleted > DELETED_SHARE * max(1, sum(live))
        if many_deleted or small > self._small_after + MAX_SMALL_FRAGMENTS:
            # Lance rewrites every fragment under the target (and re-maps every index for
            # them): a target above SMALL_FRAGMENT_ROWS made it rewrite big fragments too,
            # 62 s at a million rows; with it, only fragments under it are (1-3 s there).
            dataset.optimize.compact_files(target_rows_per_fragment=SMALL_FRAGMENT_ROWS)
            after = self._dataset().get_fragments()
            self._small_after = sum(1 for f in after if f.count_rows() < SMALL_FRAGMENT_ROWS)
        elif small > 1 and merge_new:
            self._compact_unindexed(dataset)

    def _compact_unindexed(self, dataset: Any, after: int = -1) -> None:
        """Run only the compaction tasks whose fragments no index segment covers (and that
        come after fragment ``after``)."""
        from lance.optimize import Compaction

        covered = {f for s in _segments(dataset) for f in s.fragment_ids}
        options = {"target_rows_per_fragment": SMALL_FRAGMENT_ROWS}
        plan = Compaction.plan(dataset, options)  # type: ignore[arg-type]
        tasks = [
            task
            for task in plan.tasks
            if not any(f.id in covered or f.id <= after for f in task.fragments)
        ]
        if tasks:
            rewrites = [task.execute(dataset) for task in tasks]
            Compaction.commit(dataset, rewrites, options)  # type: ignore[arg-type]

    def _refresh(self) -> list[Any]:
        """The table's indexes as of its latest version, after commits made through Lance
        (LanceDB's handle would otherwise see them only after its consistency interval)."""
        self.table.checkout_latest()
        return list(self.table.list_indices())

    def ensure_scalar_indexes(self) -> None:
        from lancedb.index import FTS, BTree, LabelList

        names = self.index_names()
        for column, kind in SCALAR_INDEXES.items():
            if column not in names:
                self.table.create_index(column, config=BTree() if kind == "btree" else LabelList())
        if "terms" not in names:
            # Terms arrive tokenised and stemmed (retrieval.tokenize): split on spaces only.
            fts = FTS(
                base_tokenizer="whitespace",
                lower_case=False,
                stem=False,
                remove_stop_words=False,
                ascii_folding=False,
                with_position=False,
            )
            self.table.create_index("terms", config=fts)

    def fold_keys(self) -> None:
        """New rows into the id and file id indexes alone, as a delta segment each (0.08 s
        at a million rows): what a write looks up stays indexed through a long import."""
        names = self.index_names()
        keys = [names[column] for column in ("id", "file_id") if column in names]
        if keys:
            self._dataset().optimize.optimize_indices(index_names=keys, num_indices_to_merge=0)

    def index_names(self) -> dict[str, str]:
        return {i.columns[0]: i.name for i in self.table.list_indices()}

    def _add_deltas(self, vectors: bool = True) -> None:
        """New rows into each index as a delta segment, then merges of small segments; the
        vector index's only when ``vectors`` (not while it is trained anew)."""

        def kept_up(indexes: list[Any]) -> list[Any]:
            return [i for i in indexes if vectors or i.columns[0] != "vector"]

        indexes = kept_up(self._refresh())
        due = [index.name for index in indexes if self._delta_due(index)]
        vector = any(i.name in due and i.columns[0] == "vector" for i in indexes)
        if due:  # one commit for all of them (one per index cost 2.3x as much at 1M)
            with self.scratch.vector_build() if vector else nullcontext():
                self._dataset().optimize.optimize_indices(index_names=due, num_indices_to_merge=0)
        for index in kept_up(self._refresh()):
            segments = index.num_segments or 1
            waited = self._waiting.get(index.name, 0)
            if segments <= self.policy.max_deltas + 1 or segments < waited + 2:
                continue
            if not self._merge_newest(index.name):
                # Nothing fits yet: do not read the index's statistics again (0.02-0.04 s
                # at a million rows) until two more segments, the least a merge needs.
                self._waiting[index.name] = segments

    def _merge_newest(self, name: str) -> bool:
        """Merge the index's newest segments of similar size, at most MERGE_AT_MOST in one
        call; returns whether any were merged."""
        merged = False
        while True:
            sizes = self._segment_rows(name)
            count = newest_to_merge(sizes)
            if count < 2 and len(sizes) > HARD_MAX_SEGMENTS:
                count = 2  # never reached in the benchmarks; a bound on search cost
            if count < 2:
                return merged
            self._dataset().optimize.optimize_indices(
                index_names=[name], num_indices_to_merge=min(count, MERGE_AT_MOST)
            )
            merged = True
            if count <= MERGE_AT_MOST:
                return True

    def _delta_due(self, index: Any) -> bool:
        column = index.columns[0]
        if column in SCALAR_INDEXES:
            wanted = max(1, self.policy.index_delta_rows)
        else:
            indexed = int(index.num_indexed_rows or 0)
            wanted = self.policy.delta_rows(indexed, vector=column == "vector")
        return bool(index.num_unindexed_rows >= wanted)

    def _retrain_vectors(self, rows: int, beside: Callable[[], None] | None = None) -> bool:
        """Train the vector index here when there is none yet (``beside`` done meanwhile);
        start a training in the background when the table has doubled since it was trained,
        or the index has another layout. Returns whether it trained here."""
        if rows < self.policy.min_rows or not self._training.may_start():
            return False
        layout = self.vector_layout()
        if layout is None:
            self.train_vectors(rows, beside)
            return True
        trained, partitions = layout
        kind = next(i.index_type for i in self._refresh() if i.columns[0] == "vector")
        fits = partitions == self.policy.partitions(trained) and str(kind) == INDEX_TYPE
        if rows >= 2 * trained or not fits:
            self.start_training()
        return False

    def start_training(self) -> None:
        """Train the vector index anew on every row, in the background (after a training
        already under way)."""
        self._training.wait()
        name = self.index_names().get("vector", VECTOR_INDEX_NAME)
        build = partial(self._build_vectors, name=name, background=True)
        self._training.start(self._dataset(), build)

    def train_vectors(self, rows: int, beside: Callable[[], None] | None = None) -> None:
        """Train the first vector index, here and now, while this thread does ``beside``.

        The other indexes' deltas (an import's new rows) fit beside the build: at a million
        rows both took 28.2-29.7 s instead of 32.3-32.4 s one after the other with Lance's
        own build (docs/benchmarks/journal.md, "The first training beside the other
        indexes"), 22-23 s with faiss's partitions on one thread meanwhile (partitions.py)."""
        began, busy = time.monotonic(), threading.Event()
        name = self.index_names().get("vector", VECTOR_INDEX_NAME)
        with ThreadPoolExecutor(1, thread_name_prefix="citewell-vector-training") as pool:
            if beside is not None:
                busy.set()  # from the start: beside the k-means it took 6 s, later 10-11
            built = pool.submit(self._build_vectors, self._dataset(), rows, name, busy=busy)
            try:
                if beside is not None:
                    beside()
            finally:
                busy.clear()  # the build has every core from here
            built.result()
        self._refresh()
        log.info("Trained the vector index on %d chunks in %.0f s", rows, time.monotonic() - began)

    def _build_vectors(
        self,
        dataset: Any,
        rows: int,
        name: str,
        background: bool = False,
        busy: threading.Event | None = None,
    ) -> None:
        """``background``: a training beside writes, which builds a big index in a child
        process at the lowest CPU priority (training.py); ``busy``: set while other work
        runs beside the build."""
        # k-means on 64 sampled rows a partition instead of LanceDB's 256: at 1.14M rows
        # 58 s instead of 105, recall@50 0.98 / 0.97 (whole table / a 1 % KB) against
        # 0.97 / 0.98, within the noise of 40 queries.
        options = {"name": name, "metric": "cosine", "replace": True,
                   "num_partitions": self.policy.partitions(rows),
                   "sample_rate": TRAINING_SAMPLE_RATE}  # fmt: skip
        with self.scratch.vector_build():
            build_vector_index(dataset, rows, options, background, busy)
        self._waiting.pop(name, None)  # one segment now: nothing waits for a merge

    def wait_for_training(self, timeout: float | None = None) -> bool:
        """Wait for a training under way in the background (and a removal of old versions);
        returns whether neither runs now."""
        began = time.monotonic()
        trained = self._training.wait(timeout)
        left = None if timeout is None else max(0.0, timeout - (time.monotonic() - began))
        return self.old_versions.wait(left) and trained

    @property
    def training_failure(self) -> str | None:
        return self._training.failure

    def _segment_rows(self, name: str) -> list[int]:
        """Rows in each segment of an index in the manifest's order (oldest first, as Lance's
        ``num_indexed_rows_per_delta``), from the manifest alone (Lance's
        index statistics open the index, and leave a file handle open for good each time)."""
        dataset = self._dataset()
        rows = {f.fragment_id: f.physical_rows for f in dataset.get_fragments()}
        return [sum(rows.get(f, 0) for f in s.fragment_ids) for s in _segments(dataset, name)]

    def vector_layout(self) -> tuple[int, int] | None:
        """(rows the base segment was trained on, its partitions), None without an index.

        Read once per trained segment: the statistics leave an open file behind (above)."""
        name = self.index_names().get("vector")
        if name is None:
            return None
        segments = _segments(self._dataset(), name)
        if not segments:
            return None
        base = min(segments, key=lambda s: s.dataset_version_at_last_update).uuid
        if base not in self._layouts:
            self._layouts = {base: self._read_layout(name)}
        return self._layouts[base]

    def _read_layout(self, name: str) -> tuple[int, int]:
        # Lance's statistics would carry every centroid (and warn about it); sizes suffice.
        os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
        segments = self._dataset().stats.index_stats(name)["indices"]
        sizes = [sum(p["size"] for p in s.get("partitions", [])) for s in segments]
        base = segments[sizes.index(max(sizes))]
        return max(sizes), int(base.get("num_partitions", len(base.get("partitions", []))))

    # --- health -----------------------------------------------------------------------
    def health(self, samples: int) -> IndexHealth:
        rows = self.table.count_rows()
        layout = self.vector_layout()
        indexes = self._refresh()
        behind = self.rows_behind(rows, indexes)
        if layout is None:
            kind = "exact (in memory)" if rows < self.policy.min_rows else "none"
            return IndexHealth(rows, kind, rows_behind=behind)
        vector = next(i for i in indexes if i.columns[0] == "vector")
        training = self._training.running
        recall = measured_recall(self.table, self.policy, samples, rows) if samples else None
        return IndexHealth(
            rows=rows,
            vector_index=str(vector.index_type),
            trained_rows=layout[0],
            partitions=layout[1],
            training_rows=0 if training is None else training.rows,
            unindexed_rows=max(i.num_unindexed_rows for i in indexes),
            rows_behind=behind,
            segments={i.columns[0]: i.num_segments or 1 for i in indexes},
            recall_at_50=recall,
            recall_samples=samples,
        )

    def rows_behind(self, rows: int, indexes: list[Any]) -> int:
        """Rows outside an index that ``after_writes`` would have taken them into by now,
        searched without an index meanwhile (every row, when the vector index was never
        trained). A write or import stopped before its closing upkeep (killed, or
        interrupted) leaves them; so does a training in the background for the rows
        written while it ran, until the next upkeep (JobRunner runs one when it ends)."""
        if not rows:
            return 0
        have = {index.columns[0] for index in indexes}
        wanted = {*SCALAR_INDEXES, "terms"}
        if rows >= self.policy.min_rows:
            wanted.add("vector")
        if wanted - have:
            return rows
        training = self._training.running is not None
        due = [
            int(index.num_unindexed_rows)
            for index in indexes
            if self._delta_due(index) and not (training and index.columns[0] == "vector")
        ]
        return max(due, default=0)


def prewarm(table: Any) -> None:
    """Load a table's search indexes into its LanceDB session's cache: a cold index reads
    each partition from disk when a query first probes it (24 of a first search's 33 ms at
    a million chunks; 3 ms once cached). About 3 s and 1.5 GB of memory at a million."""
    for index in table.list_indices():
        try:
            table.prewarm_index(index.name)
        except Exception as error:  # noqa: BLE001 - a hint: searches work without it
            log.debug("Could not prewarm index %s: %s", index.name, error)


def _segments(dataset: Any, name: str | None = None) -> list[Any]:
    """The segments of one index (every index when ``name`` is None) as the dataset's
    manifest lists them."""
    indexes = dataset.describe_indices()
    return [s for index in indexes if name in (None, index.name) for s in index.segments]


def newest_to_merge(sizes: Sequence[int]) -> int:
    """How many of the newest index segments to merge (``sizes``: rows, oldest first).

    Lance merges "the N newest". Take the newest segment, then each one before it while it
    holds no more than twice the rows taken so far: like a binary counter, segments of
    similar size merge, a row is rewritten a logarithmic number of times, and a big segment
    is never rewritten for a few new rows (merging into it, or letting the newest grow by
    one batch at a time, cost seconds per batch at a million rows). 0 when fewer than two
    qualify. Never the base."""
    if len(sizes) < 3:
        return 0
    count, total = 1, sizes[-1]
    while count < len(sizes) - 1 and sizes[-count - 1] <= 2 * total:
        total += sizes[-count - 1]
        count += 1
    return count if count >= 2 else 0
