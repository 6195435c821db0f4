"""An in-memory snapshot of a small chunk table: exact vector and keyword search, row lookups.

LanceDB costs a few milliseconds per query before it scans anything; a numpy matrix of a
10,000-chunk table answers in well under one, BM25 over postings in memory (bm25_memory) in
half a millisecond against LanceDB's 9-13, and rows are taken from an Arrow table in memory.
The snapshot is a cache of the table at one version, used only while the table is at that
version (snapshot_keeper builds the next one), so it never serves a stale chunk. Tables at
or above the ANN threshold are snapshotted only within ``table_copy_mb``; their vectors are
then searched through an IVF index in memory (ann_memory). Either store fills it
(``SnapshotSource``).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from citewell.errors import StoreError
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.ann import MemoryVectorIndex
from citewell.stores.memory.bm25 import KeywordPostings
from citewell.stores.memory.keys import FileRows, KeyIndex, take_rows
from citewell.stores.memory.vectors import FloatVectors, RowVectors, column_matrix
from citewell.stores.rows import ROW_COLUMNS, to_chunk
from citewell.types import ChunkFilter, StoredChunk

SNAPSHOT_COLUMNS = [*ROW_COLUMNS, "terms", "vector"]
SAMPLED_TOP_FROM = 65_536  # rows: above it the top k are sought among a sample's best first
SAMPLE_STEP = 32
FREEZE_ROWS = 5_000  # snapshots this big are kept out of the cyclic GC's scans
FULL_MASK_ROWS = 65_536  # above it, a filter keeping every row is dropped (a scan is cheap)


@dataclass(frozen=True)
class TableSnapshot:
    version: int
    keys: KeyIndex  # the chunk ids
    files: FileRows
    vectors: RowVectors
    kb_rows: dict[str, npt.NDArray[np.bool_] | npt.NDArray[np.int32]]  # see kb_rows_of
    rows: pa.Table  # ROW_COLUMNS, turned into chunks only when asked for
    postings: KeywordPostings
    ann: MemoryVectorIndex | None = None  # big tables: vectors searched approximately

    @classmethod
    def from_arrow(
        cls,
        version: int,
        data: pa.Table,
        dimension: int,
        index: VectorIndexPolicy | None = None,
    ) -> TableSnapshot:
        """A snapshot of ``data`` (ROW_COLUMNS, terms and vector), the table at ``version``;
        with ``index``, its vectors are searched through an IVF index in memory."""
        count = data.num_rows
        vectors = np.zeros((count, dimension), dtype=np.float32)
        if count:
            vectors = column_matrix(data["vector"])
        kb_rows = kb_rows_of(data["kb_ids"], count)
        postings = KeywordPostings.build(data["terms"])
        rows = data.select(ROW_COLUMNS).combine_chunks()  # one chunk: take is 4x faster
        ann = MemoryVectorIndex.build(vectors, index) if index is not None and count else None
        stored = ann.vectors if ann is not None else FloatVectors(vectors)
        return cls.of(version, stored, kb_rows, rows, postings, ann)

    @classmethod
    def of(
        cls,
        version: int,
        vectors: RowVectors,
        kb_rows: dict[str, npt.NDArray[np.bool_] | npt.NDArray[np.int32]],
        rows: pa.Table,
        postings: KeywordPostings,
        ann: MemoryVectorIndex | None,
        keys: KeyIndex | None = None,
        files: FileRows | None = None,
    ) -> TableSnapshot:
        """A snapshot of its parts (built, or mapped from files: memory/shared_copy.py);
        the id lookups are made from ``rows`` unless given."""
        keys = keys if keys is not None else KeyIndex.build(rows["id"])
        files = files if files is not None else FileRows.build(rows["file_id"])
        snapshot = cls(version, keys, files, vectors, kb_rows, rows, postings, ann)
        if isinstance(postings.vocabulary, dict) and len(postings.vocabulary) >= FREEZE_ROWS:
            # Out of the cyclic collector's way: every full collection walked the whole
            # vocabulary (150 ms on SciFact's 5k documents, every thread stopped), and a
            # busy server's young objects (spans waiting for export, say) bring them on.
            # What is frozen is still freed by reference counting once no longer used.
            gc.freeze()
        return snapshot

    @property
    def count(self) -> int:
        return int(self.rows.num_rows)

    def chunk_ids(self) -> list[str]:
        return list(self.keys)

    def row_of(self, chunk_id: str) -> int | None:
        return self.keys.get(chunk_id)

    @property
    def nbytes(self) -> int:
        """About what the snapshot holds: vectors, rows, postings, the lookups, the index.
        A mapped copy's rows (text, row fields) are read for results alone: not counted."""
        postings = self.postings
        arrays = (postings.start, postings.rows, postings.impact, postings.tf, postings.lengths)
        masks = sum(m.nbytes for m in self.kb_rows.values())
        vocabulary = postings.vocabulary
        terms = vocabulary.nbytes if isinstance(vocabulary, KeyIndex) else 100 * len(vocabulary)
        lookups = self.keys.hashes.nbytes * 2 + self.files.nbytes + terms
        rows = 0 if self.vectors.shared else self.rows.nbytes
        held = sum(a.nbytes for a in arrays) + self.vectors.nbytes + rows + masks
        return int(held + lookups + (self.ann.nbytes if self.ann is not None else 0))

    def get(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        """The chunks of those ids that the table holds."""
        rows = self.keys.find(list(dict.fromkeys(chunk_ids)))
        taken = take_rows(self.rows, rows[rows >= 0])
        return {row["id"]: to_chunk(row) for row in taken.to_pylist()}

    def mask(
        self, where: ChunkFilter, keep: npt.NDArray[np.bool_] | None = None
    ) -> npt.NDArray[np.bool_] | None:
        """Rows the filter allows (None: all of them), within ``keep`` when the filter
        narrows (a whole-table search applies ``keep`` itself)."""
        allowed: npt.NDArray[np.bool_] | None = None
        if where.kb_ids is not None and not (keep is None and self._covers(where.kb_ids)):
            allowed = self._kb_mask(where.kb_ids)
        if where.file_ids is not None:
            in_files = self.files.mask(where.file_ids)
            allowed = in_files if allowed is None else allowed & in_files
        if allowed is not None and keep is not None:
            allowed &= keep
        if allowed is not None and len(allowed) > FULL_MASK_ROWS and allowed.all():
            return None  # one KB holding a big table: no mask to apply per search
        return allowed

    def _kb_mask(self, kb_ids: Sequence[str]) -> npt.NDArray[np.bool_]:
        allowed = np.zeros(self.count, dtype=bool)
        for kb in kb_ids:
            rows = self.kb_rows.get(kb)
            if rows is None:
                continue
            if rows.dtype == np.bool_:
                np.logical_or(allowed, rows, out=allowed)
            else:
                allowed[rows] = True
        return allowed

    def _covers(self, kb_ids: Sequence[str]) -> bool:
        """Whether a big table's KBs named are all it has, and hold every row: a search of
        them is a search of the whole table, with no mask to build (at ten million rows in
        100 KBs, building it took 50 ms of each of the vector and keyword searches)."""
        return (
            self.count > FULL_MASK_ROWS
            and self.kb_rows.keys() <= set(kb_ids)
            and self._every_row_in_a_kb
        )

    @cached_property
    def _every_row_in_a_kb(self) -> bool:
        return bool(self._kb_mask(tuple(self.kb_rows)).all())

    def keyword_search(
        self,
        words: list[str],
        k: int,
        where: ChunkFilter,
        keep: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) of the k best allowed rows holding a query term; only
        rows ``keep`` holds (memory/changes.py: not those of files changed since)."""
        allowed = self.mask(where, keep)
        scores = self.postings.scores(words, allowed)
        if allowed is None and keep is not None:
            # the whole table's statistics still count those rows: a few among many
            scores[~keep] = 0
        return self.best(scores, k, lambda s: s > 0)

    def search(
        self,
        vector: Sequence[float],
        k: int,
        where: ChunkFilter,
        keep: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity) of the k nearest allowed rows, best first."""
        if not self.count:
            return []
        query = np.asarray(vector, dtype=np.float32)
        allowed = self.mask(where, keep)
        if allowed is None:
            allowed = keep
        if self.ann is not None:
            rows, cosines = self.ann.search(query, k, allowed)
            return list(zip(self.keys.at(rows), cosines.tolist(), strict=True))
        scores = self.vectors.all(query)
        if allowed is not None:
            scores = np.where(allowed, scores, -np.inf)
        return self.best(scores, k, np.isfinite)

    def best(
        self, scores: npt.NDArray[np.floating], k: int, counts: Any
    ) -> list[tuple[str, float]]:
        """The k highest of the rows ``counts(scores)`` admits, best first."""
        rows = _at_least_kth(scores, k, counts(scores))
        k = min(k, len(rows))
        if k <= 0:
            return []
        best = rows[np.argpartition(-scores[rows], k - 1)[:k]]
        best = best[np.argsort(-scores[best], kind="stable")]
        return list(zip(self.keys.at(best), scores[best].astype(float).tolist(), strict=True))


def _at_least_kth(
    scores: npt.NDArray[np.floating], k: int, admitted: npt.NDArray[np.bool_]
) -> npt.NDArray[np.intp]:
    """Admitted rows that may hold the k highest scores. On a big array, those at or above
    the k-th highest admitted score of every 32nd row, which is at most the true k-th: a
    partition of a million scores took 3.8 ms, this about 1."""
    if len(scores) >= SAMPLED_TOP_FROM:
        sample = scores[::SAMPLE_STEP][admitted[::SAMPLE_STEP]]
        if len(sample) > k:
            floor = np.partition(sample, len(sample) - k)[len(sample) - k]
            return np.flatnonzero(admitted & (scores >= floor))
    return np.flatnonzero(admitted)


def kb_rows_of(
    kb_ids: pa.ChunkedArray | pa.Array, count: int
) -> dict[str, npt.NDArray[np.bool_] | npt.NDArray[np.int32]]:
    """Each KB's rows (see ``kb_masks``) from a column of KB lists, a list a row."""
    return kb_masks(kb_members(kb_ids), count)


def kb_members(kb_ids: pa.ChunkedArray | pa.Array) -> dict[str, npt.NDArray[np.int32]]:
    """The rows (in order) each KB of a column of KB lists holds."""
    lists = kb_ids.combine_chunks() if isinstance(kb_ids, pa.ChunkedArray) else kb_ids
    kbs = pc.list_flatten(lists)
    if len(kbs) == 0:
        return {}
    rows = pc.list_parent_indices(lists).to_numpy().astype(np.int32)
    encoded = pc.dictionary_encode(kbs)
    codes = encoded.indices.to_numpy()
    order = np.argsort(codes, kind="stable")  # rows stay in order within a KB
    bounds = np.searchsorted(codes[order], np.arange(len(encoded.dictionary) + 1))
    return {
        kb: rows[order[bounds[code] : bounds[code + 1]]]
        for code, kb in enumerate(encoded.dictionary.to_pylist())
    }


def kb_masks(
    members: dict[str, npt.NDArray[np.int32]], count: int
) -> dict[str, npt.NDArray[np.bool_] | npt.NDArray[np.int32]]:
    """Each KB's rows: a mask for a KB holding over an eighth of them, else their numbers,
    so a big table of many small KBs (one per user, say) costs 4 bytes a membership
    rather than a byte a row for each KB."""
    found: dict[str, npt.NDArray[np.bool_] | npt.NDArray[np.int32]] = {}
    for kb, rows in members.items():
        if len(rows) * 8 > count:
            mask = np.zeros(count, dtype=bool)
            mask[rows] = True
            found[kb] = mask
        else:
            found[kb] = rows
    return found


@dataclass(frozen=True)
class TableChanges:
    """The files written since a copy's version, and their rows as the table holds them
    now (none for a file deleted): what keeps the copy current (memory/changes.py)."""

    files: frozenset[str]
    rows: TableSnapshot
    table_rows: int  # the table's rows at the version ``rows`` were read at


@dataclass(frozen=True)
class TableScan:
    """A table at one version, read in batches of ``columns`` (SNAPSHOT_COLUMNS unless
    named) as often as asked: how a big copy is written without the table in memory."""

    version: int
    rows: int
    batches: Callable[[Sequence[str] | None], Iterator[pa.Table]]

    @classmethod
    def of(cls, version: int, data: pa.Table, batch_rows: int = 65_536) -> TableScan:
        """A scan of a table in memory (tests, and sources that read it whole)."""

        def batches(columns: Sequence[str] | None) -> Iterator[pa.Table]:
            chosen = data.select(list(columns)) if columns else data
            for begin in range(0, max(data.num_rows, 1), batch_rows):
                yield chosen.slice(begin, batch_rows)

        return cls(version, data.num_rows, batches)


class CopyPutOff(StoreError):
    """A source cannot make the copy asked for now (too little disk for its files): the
    keeper tries again later, and searches read the table meanwhile."""


class SnapshotSource(Protocol):
    """What a chunk table offers snapshot_keeper: its version (changed by every write, from
    any process), its row count, a snapshot of it (at the version it read), the changes
    since a version (None: not known, make the copy again), and a big copy made earlier
    and kept (at whatever version; None: none is kept), which a process starting up takes
    and brings up to date through the changes rather than making one (``kept``: whether
    one is, without mapping it); and a scan of it, which a machine's shared copy is written
    from, a batch at a time."""

    def version(self) -> int: ...

    def count_rows(self) -> int: ...

    def load(self, index: VectorIndexPolicy | None = None) -> TableSnapshot: ...

    def changes(self, since: int) -> TableChanges | None: ...

    def saved(self, index: VectorIndexPolicy) -> TableSnapshot | None: ...

    def kept(self) -> bool: ...

    def scan(self) -> AbstractContextManager[TableScan]: ...
