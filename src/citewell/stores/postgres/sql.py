"""SQL pieces of the PostgreSQL chunk store: a chunk filter as a WHERE clause, settings for
one transaction, COPY, pgvector's text and binary forms, and the HNSW beam width."""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from citewell.types import ChunkFilter


def filter_sql(where: ChunkFilter, alias: str = "") -> tuple[str, dict[str, Any]]:
    """A WHERE clause (``TRUE`` for none) and its bound parameters."""
    prefix = f"{alias}." if alias else ""
    clauses, params = [], {}
    if where.kb_ids is not None:
        clauses.append(f"{prefix}kb_ids && CAST(:kbs AS text[])")
        params["kbs"] = list(where.kb_ids)
    if where.file_ids is not None:
        clauses.append(f"{prefix}file_id = ANY(CAST(:files AS text[]))")
        params["files"] = list(where.file_ids)
    return " AND ".join(clauses) or "TRUE", params


def set_local(db: Connection, settings: dict[str, str]) -> None:
    """Settings for this transaction only, in one round trip. Parallel workers cost more to
    start than these small queries take on a few cores."""
    calls = ", ".join(f"set_config(:n{i}, :v{i}, true)" for i in range(len(settings)))
    params = {}
    for i, (name, value) in enumerate(settings.items()):
        params[f"n{i}"], params[f"v{i}"] = name, value
    db.execute(text(f"SELECT {calls}"), params)


def copy_in(db: Connection, table: str, blocks: Iterable[bytes]) -> None:
    """COPY's binary input (copy_rows.copy_stream) into a table, inside the connection's
    transaction. In text, each vector had to be written out as 384 decimal numbers: a
    third of a bulk load's time."""
    driver = db.connection.driver_connection
    assert driver is not None  # a checked-out connection always has its driver's
    with driver.cursor() as cursor, cursor.copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as copy:
        for block in blocks:
            copy.write(block)


def vector_binary(values: Sequence[float] | np.ndarray) -> bytes:
    """pgvector's binary form of a vector: its dimension and an unused int16, then the
    numbers as big-endian float32 (what the column keeps)."""
    row = np.asarray(values, dtype=">f4")
    return struct.pack(">HH", row.shape[0], 0) + row.tobytes()


def ef_search(rows: int, k: int) -> int:
    """HNSW beam width: 100 up to 15,625 rows, growing with sqrt(rows) (800 at a million,
    where SciFact's queries found 0.72 of the exact top 50 at 400 and 0.92 at 800), at most
    pgvector's limit of 1,000."""
    return min(1000, max(100, 2 * k, round(800 * math.sqrt(rows / 1_000_000))))


def parse_vector(value: str) -> list[float]:
    """pgvector's text form ('[0.1,0.2,…]') as floats."""
    return [float(x) for x in value.strip("[]").split(",")]


def vector_literal(values: Sequence[float] | np.ndarray) -> str:
    """pgvector's text form of a vector, each number as the float32 the column keeps: nine
    significant digits give that float32 back exactly, in a third of the time ``repr``
    takes (which wrote 17; formatting was half of a bulk load's time)."""
    row = np.asarray(values, dtype=np.float32).tolist()
    return _literal_format(len(row)) % tuple(row)


@lru_cache(maxsize=16)
def _literal_format(dimension: int) -> str:
    return "[" + ",".join(["%.9g"] * dimension) + "]"
