"""LanceDB's side of a chunk table: its Arrow schema, a connection with bounded caches, the
table opened or made, and a chunk filter as Lance SQL."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from citewell.errors import StoreError
from citewell.types import ChunkFilter


def schema(dimension: int) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("file_id", pa.string()),
            ("kb_ids", pa.list_(pa.string())),
            ("idx", pa.int32()),
            ("text", pa.string()),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("page", pa.int32()),
            ("headings", pa.list_(pa.string())),
            ("file_name", pa.string()),
            ("terms", pa.string()),
            ("vector", pa.list_(pa.float32(), dimension)),
        ]
    )


def connect(path: Path, cache_mb: int) -> tuple[Any, Any]:
    """A LanceDB connection on a session of its own with caches of ``cache_mb`` (index) and
    an eighth of it (metadata): LanceDB's defaults (6 GB and 1 GB) are sized for a database
    server, not for a process that also runs the encoder. The latest version is re-read at
    most once a second, so writes of other processes (a CLI ingest while a server runs)
    become visible."""
    import lancedb

    session = lancedb.Session(
        index_cache_size_bytes=cache_mb << 20, metadata_cache_size_bytes=cache_mb << 17
    )
    interval = timedelta(seconds=1)
    return lancedb.connect(str(path), read_consistency_interval=interval, session=session), session


def open_or_create(db: Any, name: str, dimension: int) -> Any:
    """The chunk table ``name`` of the connection ``db``, made when missing; one of vectors
    of another dimension is refused."""
    if name in db.list_tables().tables:
        table = db.open_table(name)
        found = table.schema.field("vector").type.list_size
        if found != dimension:
            raise StoreError(
                f"Chunk table {name} holds {found}-dimensional vectors, the embedder makes "
                f"{dimension}; re-ingest into a new data dir or restore the model."
            )
        return table
    return db.create_table(name, schema=schema(dimension))


def quote(value: str) -> str:
    """A string as a Lance SQL literal."""
    return "'" + value.replace("'", "''") + "'"


def where_sql(where: ChunkFilter) -> str | None:
    """The filter as a Lance SQL predicate; an empty id list matches nothing."""
    clauses = []
    if where.kb_ids is not None:
        kbs = ", ".join(quote(k) for k in where.kb_ids)
        clauses.append(f"array_has_any(kb_ids, [{kbs}])" if kbs else "false")
    if where.file_ids is not None:
        files = ", ".join(quote(f) for f in where.file_ids)
        clauses.append(f"file_id IN ({files})" if files else "false")
    return " AND ".join(clauses) or None
