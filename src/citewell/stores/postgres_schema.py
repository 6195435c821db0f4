"""The PostgreSQL chunk store's tables: created on first use, brought up to date in place.

One chunk table per embedding space, and a one-row statistics table beside it (row count,
total terms, and a version every write bumps); the BM25 tables are postgres_bm25's. Opening
a table made by an earlier release adds what it lacks, under an advisory lock so that
several processes starting at once do it once.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

from citewell.db.change_listener import notify_on_update
from citewell.errors import StoreError


def columns(db: Connection, table: str) -> set[str]:
    """The column names of a table (empty when it does not exist)."""
    return set(
        db.execute(
            text(
                "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(:t) "
                "AND attnum > 0 AND NOT attisdropped"
            ),
            {"t": table},
        ).scalars()
    )


def _attribute(db: Connection, table: str, field: str, column: str) -> object:
    return db.execute(
        text(f"SELECT {field} FROM pg_attribute WHERE attrelid = to_regclass(:t) AND attname = :c"),
        {"t": table, "c": column},
    ).scalar()


def create_tables(db: Connection, table: str, dimension: int) -> None:
    """The chunk and statistics tables of ``table`` (``{table}_stats``), with their indexes."""
    stats = f"{table}_stats"
    db.execute(text("SELECT pg_advisory_xact_lock(hashtext(:t))"), {"t": table})
    found = _attribute(db, table, "atttypmod", "vector")
    if found is not None and found != dimension:
        raise StoreError(
            f"Chunk table {table} holds {found}-dimensional vectors, the embedder makes "
            f"{dimension}; use another database or restore the model."
        )
    for statement in (
        f"CREATE TABLE IF NOT EXISTS {table} (id text PRIMARY KEY, file_id text NOT NULL, "
        "kb_ids text[] NOT NULL, idx integer NOT NULL, text text NOT NULL, "
        'start integer NOT NULL, "end" integer NOT NULL, page integer, '
        "headings text[] NOT NULL, file_name text NOT NULL, terms text NOT NULL, "
        f"length integer NOT NULL, vector vector({dimension}) NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS {table}_file ON {table} (file_id, idx)",
        f"CREATE INDEX IF NOT EXISTS {table}_kbs ON {table} USING gin (kb_ids)",
        # A denser graph than pgvector's default (m 16, ef_construction 64): at a million
        # chunks that one reached recall@50 0.87 only at ef_search 800.
        f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw "
        "(vector vector_cosine_ops) WITH (m = 24, ef_construction = 128)",
        # version: bumped by every write, so in-memory snapshots know they are current.
        f"CREATE TABLE IF NOT EXISTS {stats} (one boolean PRIMARY KEY DEFAULT true "
        "CHECK (one), chunks bigint NOT NULL, length bigint NOT NULL, "
        "version bigint NOT NULL DEFAULT 0)",
        f"INSERT INTO {stats} VALUES (true, 0, 0) ON CONFLICT DO NOTHING",
    ):
        db.execute(text(statement))
    if "version" not in columns(db, stats):  # made before versions
        db.execute(text(f"ALTER TABLE {stats} ADD COLUMN version bigint NOT NULL DEFAULT 0"))
    _keep_vectors_inline(db, table)
    notify_on_update(db, stats)  # snapshots read the version only after it moved


def _keep_vectors_inline(db: Connection, table: str) -> None:
    """pgvector stores vectors out of line (TOAST) by default, so comparing a row's vector
    reads a second relation: an exact search over one KB's 7,863 rows of a million took
    60-70 ms so, 20-35 ms with the vectors in the rows. MAIN keeps them in the row unless it
    would not fit a page. Rows written before keep their layout."""
    if _attribute(db, table, "attstorage", "vector") != "m":
        # Checked first: ALTER TABLE would lock out searches meanwhile.
        db.execute(text(f"ALTER TABLE {table} ALTER COLUMN vector SET STORAGE MAIN"))
