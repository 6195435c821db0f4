"""The vector index's build at any size: the store's (faiss's centroids and partitions,
Lance's quantisation and files: ``stores/lance/partitions.py``) against Lance's own.

Rows are noisy copies of SciFact's chunk vectors (``--source``, an ingested SciFact data
dir), as ``benchmarks.million`` makes them, written to a bare Lance dataset a million at a
time (kept under ``--work`` for the next runs; ``--write-only`` writes them alone, so that
a run's peak memory is its build's). The index gets the store's parameters (cosine, about
sqrt(rows) partitions, 64 sampled rows a partition). Reported: the build's seconds, CPU seconds and
the process's peak RSS, and recall@50 of ``--queries`` stored rows (evenly spread) at the
store's whole-table probe count against an exact pass over every row.

    python -m benchmarks.lab.ivf_build --source /tmp/scifact --rows 10000000 --way store
    python -m benchmarks.lab.ivf_build --source /tmp/scifact --rows 10000000 --way lance
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lab.index_centroids import noisy_rows, scifact_vectors
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.scratch import SCRATCH_FOLDER, BuildScratch
from citewell.stores.lance.upkeep import TRAINING_SAMPLE_RATE

BLOCK = 1_000_000  # rows made and written at a time
NEIGHBOURS = 50


def blocks(base: np.ndarray, rows: int, seed: int) -> Iterator[Any]:
    import pyarrow as pa

    for start in range(0, rows, BLOCK):
        vectors = noisy_rows(base, min(BLOCK, rows - start), seed + start)
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), base.shape[1])
        ids = pa.array(np.arange(start, start + len(vectors)))
        yield pa.record_batch([ids, column], names=["id", "vector"])


def dataset(source: Path, rows: int, work: Path, seed: int) -> Any:
    """The rows' dataset, written once per ``--work`` and ``--rows``."""
    import lance
    import pyarrow as pa

    path = work / f"rows-{rows}.lance"
    if not (path / "_versions").exists():
        base = scifact_vectors(source)
        schema = pa.schema([("id", pa.int64()), ("vector", pa.list_(pa.float32(), base.shape[1]))])
        reader = pa.RecordBatchReader.from_batches(schema, blocks(base, rows, seed))
        lance.write_dataset(reader, path, max_rows_per_group=8192, max_rows_per_file=BLOCK)
    return lance.dataset(path)


def build(data: Any, way: str, partitions: int) -> dict[str, float]:
    from citewell.stores.lance.partitions import create_ivf_sq

    options = {"name": "vector_idx", "metric": "cosine", "replace": True,
               "num_partitions": partitions, "sample_rate": TRAINING_SAMPLE_RATE}  # fmt: skip
    began, cpu = time.perf_counter(), _cpu()
    with BuildScratch(Path(data.uri).parent / SCRATCH_FOLDER).vector_build():  # Lance's shuffles
        if way == "store":
            create_ivf_sq(data, options)
        else:
            data.create_index("vector", "IVF_SQ", **options)
    return {
        "seconds": round(time.perf_counter() - began, 1),
        "cpu_seconds": round(_cpu() - cpu, 1),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }


def recall(data: Any, queries: np.ndarray, probes: int) -> float:
    from citewell.stores.memory.ann import exact_ids

    truth = exact_ids(data.to_batches(columns=["id", "vector"]), queries, NEIGHBOURS)
    found = 0
    for query, exact in zip(queries, truth, strict=True):
        hits = data.to_table(
            columns=["id"],
            nearest={"column": "vector", "q": query, "k": NEIGHBOURS, "nprobes": probes,
                     "metric": "cosine"},
        )["id"].to_numpy()  # fmt: skip
        found += len(exact & set(hits.tolist()))
    return round(found / (NEIGHBOURS * len(queries)), 4)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    import lance

    from citewell.stores.memory.vectors import column_matrix

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="an ingested SciFact dir")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--way", choices=["store", "lance"], default="store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ivf_build"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--write-only", action="store_true", help="write the rows, no build")
    args = parser.parse_args()
    began = time.perf_counter()
    data = dataset(args.source, args.rows, args.work, args.seed)
    written = round(time.perf_counter() - began, 1)
    if args.write_only:
        print(json.dumps({"rows": args.rows, "rows_written_s": written}))
        return
    policy = VectorIndexPolicy()
    partitions, probes = policy.partitions(args.rows), policy.nprobes(args.rows, args.rows)
    result: dict[str, Any] = {"rows": args.rows, "way": args.way, "partitions": partitions,
                              "probes": probes, "rows_written_s": written}  # fmt: skip
    result.update(build(data, args.way, partitions))
    data = lance.dataset(data.uri)  # the version with the index
    offsets = [int(i * args.rows / args.queries) for i in range(args.queries)]
    queries = column_matrix(data.take(offsets, columns=["vector"])["vector"])
    result["recall_at_50"] = recall(data, queries, probes)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
