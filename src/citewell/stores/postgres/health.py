"""What ``citewell check`` measures of a PostgreSQL chunk table: the keyword index's
vocabulary, and the HNSW index's recall@50 against an exact scan."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import text
from sqlalchemy.engine import Engine

from citewell.stores.base import SearchHit
from citewell.stores.postgres.sql import parse_vector, set_local, vector_literal
from citewell.types import ChunkFilter

VectorSearch = Callable[[Sequence[float], int, ChunkFilter], list[SearchHit]]


def vocabulary_size(engine: Engine, df_table: str) -> int:
    """Distinct terms in the rows (the keyword index's vocabulary)."""
    with engine.connect() as db:
        found = db.execute(text(f"SELECT count(*) FROM {df_table} WHERE df > 0"))
        return int(found.scalar_one())


def measured_recall(
    engine: Engine, table: str, search: VectorSearch, samples: int, rows: int
) -> float:
    """Mean share of the exact top 50 that ``search`` finds, with the vectors of evenly
    spread stored chunks as queries."""
    step = max(1, rows // samples)
    with engine.connect() as db:
        vectors = db.execute(
            text(
                f"SELECT vector::text FROM (SELECT vector, row_number() OVER (ORDER BY id) "
                f"AS n FROM {table}) v WHERE (n - 1) % :step = 0 LIMIT :samples"
            ),
            {"step": step, "samples": samples},
        ).scalars()
        queries = [parse_vector(v) for v in vectors]
    found = []
    for vector in queries:
        ann = {h.chunk_id for h in search(vector, 50, ChunkFilter())}
        with engine.begin() as db:
            set_local(db, {"enable_indexscan": "off", "enable_bitmapscan": "off"})
            exact = db.execute(
                text(f"SELECT id FROM {table} ORDER BY vector <=> CAST(:q AS vector) LIMIT 50"),
                {"q": vector_literal(vector)},
            ).scalars()
            truth = set(exact)
        found.append(len(ann & truth) / max(1, len(truth)))
    return round(sum(found) / len(found), 3)
