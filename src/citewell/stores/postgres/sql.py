"""SQL pieces of the PostgreSQL chunk store: a chunk filter as a WHERE clause, settings for
one transaction, COPY, pgvector's text and binary forms, and the HNSW beam width."""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from psycopg import pq
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
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


# The chunk table's columns in order (schema.py), as COPY's binary form names their types.
CHUNK_COLUMN_TYPES = (
    "text", "text", "text[]", "int4", "text", "int4", "int4", "int4", "text[]", "text", "text",
    "int4", "vector",
)  # fmt: skip


def vector_oid(db: Connection) -> int:
    """The vector type's oid in this database (pgvector's extension makes it)."""
    return int(db.execute(text("SELECT 'vector'::regtype::oid")).scalar_one())


def copy_chunks(db: Connection, table: str, vector: int, rows: Iterable[tuple[Any, ...]]) -> None:
    """Rows of a chunk table (CHUNK_COLUMN_TYPES, the vector as ``vector_binary`` gives it,
    ``vector`` the type's oid) into it with COPY in binary, inside the connection's
    transaction. In text, each vector had to be written out as 384 decimal numbers: a
    third of a bulk load's time."""
    driver = db.connection.driver_connection
    assert driver is not None  # a checked-out connection always has its driver's
    with driver.cursor() as cursor:
        types = cursor.adapters.types
        oids = [_oid(types, name) for name in CHUNK_COLUMN_TYPES[:-1]] + [vector]
        cursor.adapters.register_dumper(None, _vector_dumper(vector))
        with cursor.copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(oids)
            for row in rows:
                copy.write_row(row)


def _oid(types: Any, name: str) -> int:
    if name.endswith("[]"):
        return int(types[name[:-2]].array_oid)
    return int(types[name].oid)


@lru_cache(maxsize=16)
def _vector_dumper(oid: int) -> type[Dumper]:
    """Passes pgvector's binary form through, for the type's oid in one database."""

    class VectorBinaryDumper(Dumper):
        format = pq.Format.BINARY

        def dump(self, obj: Any) -> Buffer:
            return bytes(obj)

    VectorBinaryDumper.oid = oid
    return VectorBinaryDumper


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
