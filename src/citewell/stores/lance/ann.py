"""Searches of a LanceDB table's vector index, and its recall measured against exact search
(``citewell check``)."""

from __future__ import annotations

import statistics
from typing import Any

from citewell.stores.index_policy import VectorIndexPolicy


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
    found = []
    for vector in data["vector"].to_pylist():
        ann = ann_query(table, policy, vector, rows).limit(50).to_list()
        exact = table.search(vector).distance_type("cosine").bypass_vector_index()
        truth = {r["id"] for r in exact.select(["id", "_distance"]).limit(50).to_list()}
        found.append(len({r["id"] for r in ann} & truth) / max(1, len(truth)))
    return round(statistics.mean(found), 3)
