"""An approximate vector index in memory, for the copy of a table too big to scan exactly.

At a million 384-dimensional chunks an exact numpy scan reads 1.5 GB a query (~100 ms on
two cores), and LanceDB's IVF search spends 25-30 ms of a 42-58 ms hybrid search, most of
it around the scan (planning, reading ids and original vectors of the candidates). Here
faiss keeps about sqrt(rows) IVF partitions of 4-bit product-quantised codes (two
dimensions a code, 96 bytes a 384-dimensional vector) scanned with SIMD ("fast scan"):
probing 160 of 1,000 partitions takes about 2 ms at a million. Its best 20 x k candidates
are then scored against the copy's own vectors (a mapped copy ranks them by int8 codes
first and reads the fine codes of the best 3 x k: 16 bits a value), so a result's score is
the cosine an exact search gives (within about 1e-5 for a mapped copy). Measured on the
million-chunk table with 150 embedded SciFact queries (docs/benchmarks/journal.md):
recall@50 0.998 (worst query 0.86) in 2.3 ms, against 0.996 (worst 0.74) in 7.4 ms for
8-bit vectors at LanceDB's 80 probes.

A filter that keeps few rows (a small KB of a big table) is searched exactly over its rows;
one that keeps many probes more partitions with the other rows masked out, as LanceDB's
filtered search does. Below ``MIN_TRAIN_ROWS`` (only in tests: copies are made of tables
past the ANN threshold) every search is exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.vectors import FloatVectors, RowVectors, column_matrix

EXACT_ROWS = 65_536  # a filter keeping at most this many rows: exact scan over them
MIN_TRAIN_ROWS = 4_096  # fewer rows: no index, every search exact
TRAIN_PER_PARTITION = 64  # k-means sample: rows per partition
TRAIN_ITERATIONS = 10
PROBE_FACTOR = 5.0  # probes: 5 x sqrt(partitions), twice LanceDB's for 8-bit vectors
# Candidates from the 4-bit codes: this many times what was asked for. At ten million
# SciFact chunks and noisy copies (about 920 close copies of each chunk) 10 x k gave
# recall@50 0.942 at any number of probes, 20 x k 1.0: the codes rank a dense cluster
# coarsely, and its best rows are found among more candidates, not more partitions.
REFINE = 20
RESCORE = 3  # of those, quantized vectors read as float32 for this many times k


def _pq_codes(dimension: int) -> int:
    """Product-quantiser codes a vector: one per two dimensions (one each if odd)."""
    return dimension // 2 if dimension % 2 == 0 else dimension


def _faiss() -> Any:
    import faiss  # deferred: tables below the threshold never need it

    return faiss


def untrained_index(count: int, dimension: int, policy: VectorIndexPolicy) -> Any:
    """faiss's IVF index of 4-bit codes laid out for ``count`` rows, to be trained (None:
    too few rows for one, every search exact)."""
    if count < MIN_TRAIN_ROWS:
        return None
    faiss = _faiss()
    # One thread: the copy is made on a thread of the lowest priority, and faiss's
    # OpenMP threads would not be; one query's search uses one anyway.
    faiss.omp_set_num_threads(1)
    partitions = min(policy.partitions(count), count // TRAIN_PER_PARTITION)
    index = faiss.index_factory(
        dimension, f"IVF{partitions},PQ{_pq_codes(dimension)}x4fs", faiss.METRIC_INNER_PRODUCT
    )
    faiss.extract_index_ivf(index).cp.niter = TRAIN_ITERATIONS
    return index


def training_rows(index: Any, count: int, seed: int = 1) -> npt.NDArray[np.int64]:
    """The rows the index trains on, in order: 64 a partition, drawn at random."""
    sample = min(count, int(index.nlist) * TRAIN_PER_PARTITION)
    return np.sort(np.random.default_rng(seed).choice(count, sample, replace=False))


@dataclass(frozen=True)
class MemoryVectorIndex:
    """IVF partitions of 4-bit codes of ``vectors`` (kept for the exact second pass)."""

    index: Any  # a faiss IndexIVFPQFastScan; None: too few rows, search exactly
    vectors: RowVectors
    policy: VectorIndexPolicy

    @classmethod
    def build(
        cls, vectors: npt.NDArray[np.float32], policy: VectorIndexPolicy, seed: int = 1
    ) -> MemoryVectorIndex:
        """Train on a sample (64 rows a partition) and add every row."""
        count = len(vectors)
        index = untrained_index(count, vectors.shape[1], policy)
        if index is None:
            return cls(None, FloatVectors(vectors), policy)
        index.train(np.ascontiguousarray(vectors[training_rows(index, count, seed)]))
        index.add(vectors)
        return cls(index, FloatVectors(vectors), policy)

    def probes(self, matching: int) -> int:
        """5 x sqrt(partitions) for the whole table, more for a filter keeping fewer rows
        (``VectorIndexPolicy.nprobes``' spread)."""
        count, partitions = self.vectors.shape[0], self.partitions
        spread: float = (count / max(1, min(count, matching))) ** (1 / 4)
        base = max(self.policy.min_probes, math.ceil(PROBE_FACTOR * math.sqrt(partitions)))
        return int(min(partitions, math.ceil(base * spread)))

    @property
    def partitions(self) -> int:
        return 0 if self.index is None else int(self.index.nlist)

    @property
    def nbytes(self) -> int:
        """The codes and row ids faiss holds (the float vectors are the copy's)."""
        count, dimension = self.vectors.shape
        code_bytes = _pq_codes(dimension) // 2  # 4 bits a code
        return int(count * (code_bytes + 8) + self.partitions * dimension * 4)

    def search(
        self, query: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.bool_] | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Rows and cosines of about the k nearest allowed rows, best first."""
        count = self.vectors.shape[0]
        matching = count if allowed is None else int(np.count_nonzero(allowed))
        if matching == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.index is None or (allowed is not None and matching <= EXACT_ROWS):
            rows = np.arange(count) if allowed is None else np.flatnonzero(allowed)
            return self._nearest(rows, query, k)
        faiss = _faiss()
        params = faiss.SearchParametersIVF()
        params.nprobe = self.probes(matching)
        if allowed is not None and matching < count:
            bits = np.packbits(allowed, bitorder="little")  # alive until the search returns
            params.sel = faiss.IDSelectorBitmap(count, faiss.swig_ptr(bits))
        wanted = min(matching, k * REFINE)
        _, found = self.index.search(query.reshape(1, -1), wanted, params=params)
        rows = found[0][found[0] >= 0]
        return self._nearest(rows, query, k)

    def _nearest(
        self, rows: npt.NDArray[np.int64], query: npt.NDArray[np.float32], k: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The k nearest of ``rows``. Quantized vectors rank them by their int8 codes first
        and read the fine codes of the best 3 x k alone: the reads that leave memory
        (page cache, or the disk when it is cold) are few."""
        wanted = k * RESCORE
        if len(rows) > wanted and not isinstance(self.vectors, FloatVectors):
            rough = self.vectors.rough(rows, query)
            rows = rows[np.argpartition(-rough, wanted - 1)[:wanted]]
        return self._exact(rows, query, k)

    def _exact(
        self, rows: npt.NDArray[np.int64], query: npt.NDArray[np.float32], k: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        scores = self.vectors.exact(rows, query)
        k = min(k, len(rows))
        if k <= 0:
            return rows[:0], scores[:0]
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        return rows[best], scores[best]

    def recall(self, samples: int, k: int = 50) -> float:
        """Mean share of the exact top k that the index finds, with the vectors of evenly
        spread rows as queries (as ``citewell check`` measures LanceDB's index)."""
        count = self.vectors.shape[0]
        picked = np.array(sorted({int(i * count / samples) for i in range(samples)}))
        if not len(picked):
            return 1.0
        queries = self.vectors.take(picked)
        found = []
        for query, truth in zip(queries, exact_top(self.vectors, queries, k), strict=True):
            rows, _ = self.search(query, k, None)
            found.append(len(set(rows.tolist()) & set(truth.tolist())) / max(1, len(truth)))
        return round(float(np.mean(found)), 3)


def exact_top(
    vectors: RowVectors, queries: npt.NDArray[np.float32], k: int
) -> list[npt.NDArray[np.int64]]:
    """Each query's k nearest rows (in no order), every row scored: one pass over the rows
    for all the queries (at ten million rows, a pass a query took 18 minutes for 200)."""
    numbered = ((np.arange(b, b + len(block)), block) for b, block in vectors.blocks())
    return nearest_in_blocks(numbered, queries, k)


def nearest_in_blocks(
    blocks: Iterable[tuple[npt.NDArray[Any], npt.NDArray[np.float32]]],
    queries: npt.NDArray[np.float32],
    k: int,
) -> list[npt.NDArray[Any]]:
    """The labels of each query's k best-scoring rows (in no order; all of them when fewer),
    from (labels, rows) blocks scored as they come, each query's best k carried between
    blocks. Rows and queries are scored by their dot product: unit rows give the cosine."""
    best_labels: npt.NDArray[Any] = np.zeros((0, len(queries)), dtype=np.int64)
    best_scores = np.zeros((0, len(queries)), dtype=np.float32)
    for labels, block in blocks:
        scores = np.concatenate([best_scores, block @ queries.T])
        wide = np.broadcast_to(labels[:, None], (len(block), len(queries)))
        every = np.concatenate([best_labels.astype(labels.dtype, copy=False), wide])
        keep = np.argpartition(-scores, k - 1, axis=0)[:k] if len(scores) > k else None
        best_scores = scores if keep is None else np.take_along_axis(scores, keep, axis=0)
        best_labels = every if keep is None else np.take_along_axis(every, keep, axis=0)
    return list(best_labels.T)


def exact_ids(batches: Iterable[Any], queries: npt.NDArray[np.float32], k: int) -> list[set[str]]:
    """The ids of each query's ``k`` nearest rows by cosine, from one pass over Arrow
    batches of the columns ``id`` and ``vector`` (``citewell check``: an exact search a
    query read every vector each time)."""
    blocks = (
        (b["id"].to_numpy(zero_copy_only=False), unit_rows(column_matrix(b["vector"])))
        for b in batches
    )
    return [set(ids.tolist()) for ids in nearest_in_blocks(blocks, unit_rows(queries), k)]


def unit_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row scaled to length 1, so that a dot product is the cosine (a zero row stays
    zero)."""
    lengths = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (matrix / np.maximum(lengths, 1e-12)).astype(np.float32)
    return unit
