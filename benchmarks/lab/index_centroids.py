"""How much of building the vector index is k-means: the store's build against the same
build given centroids trained beforehand (what an import could do while it writes).

Rows are SciFact's chunk vectors (``--source``, an ingested SciFact data dir) plus noise,
as ``benchmarks.million`` makes its copies, written to a bare Lance dataset. The IVF_SQ
index is then built twice on the same rows with the store's parameters (cosine, about
sqrt(rows) partitions, 64 sampled rows a partition):

* ``lance``: Lance samples the rows and trains its own k-means (what the store does);
* ``given``: faiss trains spherical k-means on a sample of the vectors in memory (what an
  import holds as it writes), and Lance is given the centroids (``ivf_centroids``).

Each reports its seconds, and recall@50 of ``--queries`` held-out noisy vectors at the
store's whole-table probe count against an exact search.

    python -m benchmarks.lab.index_centroids --source /tmp/scifact --rows 200000
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.scratch import SCRATCH_FOLDER, BuildScratch
from citewell.stores.lance.upkeep import TRAINING_SAMPLE_RATE

SIGMA = 0.025  # as benchmarks.million's copies


def noisy_rows(base: np.ndarray, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picked = base[rng.integers(0, len(base), count)]
    vectors = picked + rng.normal(0, SIGMA, picked.shape).astype(np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def scifact_vectors(source: Path) -> np.ndarray:
    from benchmarks.common import open_scifact_index

    app, _data, _kb = open_scifact_index(source)
    try:
        table = app.store._table.to_arrow()
        flat = table["vector"].combine_chunks().flatten().to_numpy()
        return np.asarray(flat, dtype=np.float32).reshape(table.num_rows, -1)
    finally:
        app.close()


def write_dataset(path: Path, vectors: np.ndarray):  # noqa: ANN201 (lance has no types)
    import lance
    import pyarrow as pa

    shutil.rmtree(path, ignore_errors=True)
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])
    table = pa.table({"id": np.arange(len(vectors)), "vector": column})
    return lance.write_dataset(table, path, max_rows_per_group=8192)


def faiss_centroids(vectors: np.ndarray, partitions: int, seed: int) -> np.ndarray:
    import faiss

    rng = np.random.default_rng(seed)
    sample = vectors[rng.choice(len(vectors), min(len(vectors), partitions * 64), False)]
    kmeans = faiss.Kmeans(vectors.shape[1], partitions, niter=20, spherical=True, seed=seed)
    kmeans.train(np.ascontiguousarray(sample))
    return np.asarray(kmeans.centroids, dtype=np.float32)


def recall(dataset, vectors: np.ndarray, queries: np.ndarray, probes: int) -> float:  # noqa: ANN001
    found = 0
    for query in queries:
        exact = np.argsort(-(vectors @ query))[:50]
        hits = dataset.to_table(
            columns=["id"],
            nearest={"column": "vector", "q": query, "k": 50, "nprobes": probes,
                     "metric": "cosine", "refine_factor": 1},
        )["id"].to_numpy()  # fmt: skip
        found += len(set(exact.tolist()) & set(hits.tolist()))
    return round(found / (50 * len(queries)), 4)


def build(dataset, partitions: int, centroids: np.ndarray | None) -> float:  # noqa: ANN001
    began = time.perf_counter()
    with BuildScratch(Path(dataset.uri).parent / SCRATCH_FOLDER).vector_build():  # its shuffles
        dataset.create_index(
            "vector", "IVF_SQ", name="vector_idx", metric="cosine", replace=True,
            num_partitions=partitions, sample_rate=TRAINING_SAMPLE_RATE, ivf_centroids=centroids,
        )  # fmt: skip
    return round(time.perf_counter() - began, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="an ingested SciFact dir")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("/tmp/index_centroids"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    base = scifact_vectors(args.source)
    vectors = noisy_rows(base, args.rows, args.seed)
    queries = noisy_rows(base, args.queries, args.seed + 1)
    policy = VectorIndexPolicy()
    partitions = policy.partitions(args.rows)
    probes = policy.nprobes(args.rows, args.rows)
    dataset = write_dataset(args.work / "rows.lance", vectors)
    results = {"rows": args.rows, "partitions": partitions, "probes": probes}
    for way in ("lance", "given", "lance", "given"):  # in turns: the machine is noisy
        began = time.perf_counter()
        centroids = faiss_centroids(vectors, partitions, args.seed) if way == "given" else None
        trained = round(time.perf_counter() - began, 2)
        built = build(dataset, partitions, centroids)
        results.setdefault(way, []).append(
            {"kmeans_s": trained, "index_s": built, "recall_at_50": recall(
                dataset, vectors, queries, probes)}
        )  # fmt: skip
        print(json.dumps({way: results[way][-1]}), flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
