"""Searches of a LanceDB table's vector index, and its recall measured against exact search
(``citewell check``)."""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.ann import exact_ids
from citewell.stores.memory.vectors import column_matrix

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
    queries = column_matrix(data["vector"])
    found = []
    for vector, truth in zip(queries, exact_neighbours(table, queries), strict=True):
        ann = ann_query(table, policy, vector, rows).limit(NEIGHBOURS).to_list()
        found.append(len({r["id"] for r in ann} & truth) / max(1, len(truth)))
    return round(statistics.mean(found), 3)


def exact_neighbours(table: Any, queries: np.ndarray, k: int = NEIGHBOURS) -> list[set[str]]:
    """The ids of each query's ``k`` nearest rows by cosine, from one pass over the table's
    vectors for all the queries (docs/benchmarks/journal.md, "Recall checks that read the
    table once")."""
    batches = table.to_lance().to_batches(columns=["id", "vector"], batch_size=PASS_BATCH)
    return exact_ids(batches, queries, k)
