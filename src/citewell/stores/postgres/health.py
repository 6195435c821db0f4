"""What ``citewell check`` measures of a PostgreSQL chunk table: the HNSW index's recall@50
against an exact search.

The exact top 50 of every sampled query comes from one pass over the table's vectors, not
one sequential scan a query: at 300,000 rows each scan took 0.33 s and the pass 2.2 s for
all 20 queries, and a table past the page cache (37 GB at ten million chunks) is read from
disk once instead of 20 times (docs/benchmarks/journal.md, "Recall checks that read the
table once")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from citewell.stores.base import SearchHit
from citewell.stores.memory.ann import exact_ids
from citewell.stores.postgres.sql import parse_vector, set_local
from citewell.types import ChunkFilter

VectorSearch = Callable[[Sequence[float], int, ChunkFilter], list[SearchHit]]
ColumnBatches = Callable[[Connection, Sequence[str]], Iterable[pa.Table]]
NEIGHBOURS = 50


def measured_recall(
    engine: Engine, table: str, batches: ColumnBatches, search: VectorSearch, samples: int
) -> tuple[float, int]:
    """(mean share of the exact top 50 that ``search`` finds, queries asked), with the
    vectors of stored chunks spread evenly over the table's pages as queries (fewer than
    ``samples`` in a table of fewer pages)."""
    with engine.begin() as db:
        queries = sampled_vectors(db, table, samples)
    if not queries:
        return 1.0, 0
    truth = exact_neighbours(engine, batches, np.array(queries, dtype=np.float32))
    found = []
    for vector, exact in zip(queries, truth, strict=True):
        ann = {h.chunk_id for h in search(vector, NEIGHBOURS, ChunkFilter())}
        found.append(len(ann & exact) / max(1, len(exact)))
    return round(sum(found) / len(found), 3), len(found)


def sampled_vectors(db: Connection, table: str, samples: int) -> list[list[float]]:
    """The vectors of up to ``samples`` distinct rows spread evenly over the table: in a
    table of as many pages, the first row stored at or after each of as many evenly spread
    pages, a range scan of row addresses each (numbering the rows in id order read the
    whole table: 1.15 s at 300,000 rows); in a smaller one, every row read. Within a
    transaction: a sequential scan, which the planner may take for an early page, is ruled
    out."""
    set_local(db, {"enable_seqscan": "off"})
    size = "pg_relation_size(CAST(:t AS regclass)) / current_setting('block_size')::int"
    pages = int(db.execute(text(f"SELECT {size}"), {"t": table}).scalar_one())
    if pages < samples:
        rows = db.execute(text(f"SELECT id, vector::text FROM {table} ORDER BY ctid")).all()
        return [parse_vector(v) for _, v in rows[:: max(1, len(rows) // samples)][:samples]]
    seen: dict[str, list[float]] = {}
    for block in sorted({n * pages // samples for n in range(samples)}):
        row = db.execute(
            text(f"SELECT id, vector::text FROM {table} WHERE ctid >= CAST(:start AS tid) LIMIT 1"),
            {"start": f"({block},0)"},
        ).first()
        if row is not None:
            seen.setdefault(row[0], parse_vector(row[1]))
    return list(seen.values())


def exact_neighbours(
    engine: Engine, batches: ColumnBatches, queries: np.ndarray, k: int = NEIGHBOURS
) -> list[set[str]]:
    """The ids of each query's ``k`` nearest rows by cosine, from one pass over the table
    (``batches``: the rows' columns a batch at a time, read through ``db``)."""
    with engine.connect() as db:
        return exact_ids(batches(db, ["id", "vector"]), queries, k)
