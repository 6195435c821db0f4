"""The IVF side of a vector index build, done with faiss before Lance takes over.

Lance's ``create_index`` of IVF_SQ spent 47 CPU seconds at a million 384-dim rows, most of
it assigning every row to its nearest centroid; the same assignment is one matrix product a
block, which faiss (BLAS) does in a quarter of that (through groups of the centroids when
they are many: nearest.py). So a build here trains the centroids on a sample (spherical
k-means: unit centroids, so the nearest by cosine is the nearest by L2 too, as Lance
compares them for queries and later deltas), assigns every row, writes the assignments as
the one-file dataset Lance reads (``precomputed_partition_dataset``) and leaves Lance the
scalar quantisation and the index's files (journal, "An index built from faiss's
partitions").
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from threading import Event
from typing import Any

import numpy as np
import numpy.typing as npt

from citewell.stores.background import stop_if_exiting
from citewell.stores.lance.nearest import NearestCentroids
from citewell.stores.memory.ann import unit_rows
from citewell.stores.memory.vectors import column_matrix

# Recall@50 on a million clustered rows, the store's probes: 0.9853 at 5 iterations, 0.9826
# at 4, 0.9836-0.984 at 10 (journal, "An import's own overheads, again"); each costs the
# sample's distances to every centroid, about 0.5 s on one core at a million rows.
KMEANS_ITERATIONS = 5
ASSIGN_BATCH = 65_536  # rows read and assigned at a time
# Lance draws 256 x this many rows for the scalar quantiser's bounds, two rows a read:
# 65,536 at its default took 4 s of its 9 s at a million rows, 4,096 take 0.3 s; recall@50
# 0.9866-0.9872 against 0.9861-0.9865 (journal, "The quantiser's sample").
SQ_SAMPLE_RATE = 16
SEED = 1234

log = logging.getLogger(__name__)


def create_ivf_sq(dataset: Any, options: dict[str, Any], busy: Event | None = None) -> None:
    """Lance's IVF_SQ index of the vector column (``options``: ``create_index``'s, with
    ``num_partitions``, ``sample_rate`` and a ``metric`` of cosine), its centroids and
    the rows' partitions computed here. ``busy`` is set while other work runs beside."""
    options = dict(options)
    partitions, sample_rate = options["num_partitions"], options.pop("sample_rate")
    threads, began = FaissThreads(busy), time.perf_counter()
    centroids = trained_centroids(dataset, partitions, sample_rate, threads)
    trained = time.perf_counter()
    # In the build's scratch folder, where scratch.py points TMPDIR for Lance's own files
    # (Python's temp dir was fixed before): 12 bytes a row, 120 MB at ten million.
    scratch = os.environ.get("TMPDIR")
    with tempfile.TemporaryDirectory(prefix="citewell-partitions-", dir=scratch) as where:
        assigned = write_assignments(dataset, centroids, f"{where}/partitions.lance", threads)
        placed = time.perf_counter()
        dataset.create_index(
            "vector",
            "IVF_SQ",
            ivf_centroids=centroids,
            precomputed_partition_dataset=assigned,
            sample_rate=SQ_SAMPLE_RATE,
            **options,
        )
    log.info(
        "Vector index of %d partitions: centroids %.1f s, rows assigned %.1f s, Lance's "
        "quantisation and files %.1f s", partitions, trained - began, placed - trained,
        time.perf_counter() - placed,
    )  # fmt: skip


def row_ids(batch: Any) -> npt.NDArray[np.uint64]:
    """The batch's row ids, copied: a view of them kept the whole decoded batch (its
    vectors too) alive, 15 GB held at the end of a scan of ten million rows (journal, "The
    vector index's build at ten million")."""
    return np.array(batch["_rowid"].to_numpy(), dtype=np.uint64, copy=True)


class FaissThreads:
    """faiss's thread count in the building thread (OpenMP keeps one per calling thread):
    one while ``busy`` is set (other work, of about a core, runs beside the build), all it
    would take otherwise. faiss's OpenMP threads wait for each other by spinning, so two of
    them beside a busy thread finish later than one (journal, "An index built from
    faiss's partitions")."""

    def __init__(self, busy: Event | None) -> None:
        import faiss

        self.busy, self.all = busy, faiss.omp_get_max_threads()

    def set(self) -> None:
        import faiss

        shared = self.busy is not None and self.busy.is_set()
        faiss.omp_set_num_threads(1 if shared else self.all)


def trained_centroids(
    dataset: Any, partitions: int, sample_rate: int, threads: FaissThreads | None = None
) -> npt.NDArray[np.float32]:
    """Unit centroids from spherical k-means over ``sample_rate`` rows a partition, drawn
    evenly at random from the dataset's rows (all of them when fewer)."""
    import faiss

    rows = dataset.count_rows()
    wanted = min(rows, partitions * sample_rate)
    chosen = np.sort(np.random.default_rng(SEED).choice(rows, wanted, replace=False))
    sample = unit_rows(column_matrix(dataset.take(chosen, columns=["vector"])["vector"]))
    kmeans = faiss.Kmeans(
        sample.shape[1], partitions, niter=KMEANS_ITERATIONS, seed=SEED, spherical=True,
        max_points_per_centroid=sample_rate, min_points_per_centroid=1,
    )  # fmt: skip
    if threads is not None:
        threads.set()
    kmeans.train(np.ascontiguousarray(sample))
    centroids: npt.NDArray[np.float32] = np.asarray(kmeans.centroids, dtype=np.float32)
    return centroids


def write_assignments(
    dataset: Any, centroids: npt.NDArray[np.float32], uri: str, threads: FaissThreads | None = None
) -> str:
    """Each row's nearest centroid (nearest.py), as a dataset of one file of ``row_id``
    (uint64) and ``partition`` (uint32) at ``uri``; returns ``uri``."""
    import lance
    import pyarrow as pa

    placing = NearestCentroids(centroids)
    ids, nearest = [], []
    for batch in dataset.to_batches(
        columns=["vector"], with_row_id=True, batch_size=ASSIGN_BATCH, filter="vector IS NOT NULL"
    ):
        stop_if_exiting()
        if threads is not None:
            threads.set()
        ids.append(row_ids(batch))
        nearest.append(placing.of(np.ascontiguousarray(column_matrix(batch["vector"]))))
    table = pa.table(
        {
            "row_id": pa.array(np.concatenate(ids) if ids else [], pa.uint64()),
            "partition": pa.array(np.concatenate(nearest) if nearest else [], pa.uint32()),
        }
    )
    lance.write_dataset(table, uri, max_rows_per_file=1 << 62, max_rows_per_group=1 << 20)
    return uri
