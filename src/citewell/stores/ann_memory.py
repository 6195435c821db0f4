"""An approximate vector index in memory, for the copy of a table too big to scan exactly.

At a million 384-dimensional chunks an exact numpy scan reads 1.5 GB a query (~100 ms on
two cores), and LanceDB's IVF search spends 25-30 ms of a 42-58 ms hybrid search, most of
it around the scan (planning, reading ids and original vectors of the candidates). faiss
scans the same IVF layout (about sqrt(rows) partitions, 8-bit vectors) in a few
milliseconds; the best candidates are then scored exactly against the copy's own float
vectors, so a result's score is the cosine an exact search gives.

A filter that keeps few rows (a small KB of a big table) is searched exactly over its rows;
one that keeps many probes more partitions with the other rows masked out, as LanceDB's
filtered search does (``VectorIndexPolicy.nprobes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from citewell.stores.lance_upkeep import VectorIndexPolicy

EXACT_ROWS = 65_536  # a filter keeping at most this many rows: exact scan over them
TRAIN_PER_PARTITION = 40  # k-means sample: rows per partition (faiss warns below 39)
TRAIN_ITERATIONS = 10
REFINE = 4  # candidates scored exactly: this many times what was asked for


def _faiss() -> Any:
    import faiss  # deferred: tables below the threshold never need it

    return faiss


@dataclass(frozen=True)
class MemoryVectorIndex:
    """IVF partitions over 8-bit vectors of ``vectors`` (kept for the exact second pass)."""

    index: Any  # faiss.IndexIVFScalarQuantizer
    vectors: npt.NDArray[np.float32]
    policy: VectorIndexPolicy

    @classmethod
    def build(
        cls, vectors: npt.NDArray[np.float32], policy: VectorIndexPolicy, seed: int = 1
    ) -> MemoryVectorIndex:
        """Train on a sample (about 40 rows a partition) and add every row."""
        faiss = _faiss()
        # One thread: the copy is made on a thread of the lowest priority, and faiss's
        # OpenMP threads would not be; one query's search uses one anyway.
        faiss.omp_set_num_threads(1)
        count, dimension = vectors.shape
        partitions = min(policy.partitions(count), max(1, count // TRAIN_PER_PARTITION))
        quantizer = faiss.IndexFlatIP(dimension)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, dimension, partitions, faiss.ScalarQuantizer.QT_8bit,
            faiss.METRIC_INNER_PRODUCT,
        )  # fmt: skip
        index.cp.niter = TRAIN_ITERATIONS
        index.cp.seed = seed
        sample = min(count, partitions * TRAIN_PER_PARTITION)
        rows = np.random.default_rng(seed).choice(count, sample, replace=False)
        index.train(np.ascontiguousarray(vectors[np.sort(rows)]))
        index.add(vectors)
        return cls(index, vectors, policy)

    @property
    def partitions(self) -> int:
        return int(self.index.nlist)

    @property
    def nbytes(self) -> int:
        """The 8-bit codes and row ids faiss holds (the float vectors are the copy's)."""
        count, dimension = self.vectors.shape
        return int(count * (dimension + 8) + self.partitions * dimension * 4)

    def search(
        self, query: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.bool_] | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Rows and cosines of about the k nearest allowed rows, best first."""
        count = len(self.vectors)
        matching = count if allowed is None else int(np.count_nonzero(allowed))
        if matching == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if allowed is not None and matching <= EXACT_ROWS:
            rows = np.flatnonzero(allowed)
            return self._exact(rows, query, k)
        faiss = _faiss()
        params = faiss.SearchParametersIVF()
        params.nprobe = self.policy.nprobes(count, matching)
        if allowed is not None and matching < count:
            bits = np.packbits(allowed, bitorder="little")  # alive until the search returns
            params.sel = faiss.IDSelectorBitmap(count, faiss.swig_ptr(bits))
        wanted = min(matching, max(k * REFINE, k + 16))
        _, found = self.index.search(query.reshape(1, -1), wanted, params=params)
        rows = found[0][found[0] >= 0]
        return self._exact(rows, query, k)

    def _exact(
        self, rows: npt.NDArray[np.int64], query: npt.NDArray[np.float32], k: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        scores = self.vectors[rows] @ query
        k = min(k, len(rows))
        if k <= 0:
            return rows[:0], scores[:0]
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        return rows[best], scores[best]

    def recall(self, samples: int, k: int = 50) -> float:
        """Mean share of the exact top k that the index finds, with the vectors of evenly
        spread rows as queries (as ``citewell check`` measures LanceDB's index)."""
        count = len(self.vectors)
        found = []
        for row in sorted({int(i * count / samples) for i in range(samples)}):
            query = self.vectors[row]
            rows, _ = self.search(query, k, None)
            truth = self._exact(np.arange(count), query, k)[0]
            found.append(len(set(rows.tolist()) & set(truth.tolist())) / max(1, len(truth)))
        return round(float(np.mean(found)), 3) if found else 1.0
