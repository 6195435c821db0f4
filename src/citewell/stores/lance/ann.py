"""Searches of a LanceDB table's vector index, and its recall measured against exact search
(``citewell check``)."""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np
import pyarrow as pa

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.ann import nearest_in_blocks, unit_rows

NEIGHBOURS = 50
PASS_BATCH = 65_536  # rows scored at a time in the exact pass


def ann_query(
    table: Any, policy: VectorIndexPolicy, vector: Any, rows: int, matching: int | None = None
) -> Any:
    """An index search among ``matching`` of the table's ``rows`` rows (all of them when
    None), probing as many partitions as that share needs."""
    nprobes = policy.nprobes(rows, rows if matching is None else matching)
    return (
        table.search(list(vector), vector_column_name="vector")
        .distance_type("cosine")
        .nprobes(nprobes)
        .select(["id", "_distance"])
    )


def measured_recall(table: Any, policy: VectorIndexPolicy, samples: int, rows: int) -> float:
    """Mean share of the exact top 50 that the ANN search finds, with stored vectors of
    evenly spread rows as the queries."""
    offsets = [int(i * rows / samples) for i in range(samples)]
    data = table.take_offsets(offsets).select(["vector"]).to_arrow()
    queries = _matrix(data["vector"].combine_chunks())
    found = []
    for vector, truth in zip(queries, exact_neighbours(table, queries), strict=True):
        ann = ann_query(table, policy, vector, rows).limit(NEIGHBOURS).to_list()
        found.append(len({r["id"] for r in ann} & truth) / max(1, len(truth)))
    return round(statistics.mean(found), 3)


def exact_neighbours(table: Any, queries: np.ndarray, k: int = NEIGHBOURS) -> list[set[str]]:
    """The ids of each query's ``k`` nearest rows by cosine, from one pass over the table's
    vectors for all the queries: an exact search a query read every vector each time
    (docs/benchmarks/journal.md, "Recall checks that read the table once")."""
    batches = table.to_lance().to_batches(columns=["id", "vector"], batch_size=PASS_BATCH)
    blocks = (
        (b["id"].to_numpy(zero_copy_only=False), unit_rows(_matrix(b["vector"]))) for b in batches
    )
    return [set(ids.tolist()) for ids in nearest_in_blocks(blocks, unit_rows(queries), k)]


def _matrix(vectors: pa.FixedSizeListArray) -> np.ndarray:
    """A fixed-size list column as a float32 matrix."""
    flat = vectors.flatten().to_numpy(zero_copy_only=False)
    matrix: np.ndarray = flat.reshape(len(vectors), -1).astype(np.float32, copy=False)
    return matrix
