"""The PostgreSQL chunk store's tables: created on first use, upgraded in place by version.

One chunk table per embedding space, and a one-row statistics table beside it (row count,
total terms, and a version every write bumps); the BM25 index and document frequencies are
bm25.py's. Each
chunk table's schema version is kept in ``citewell_chunk_tables``; opening a table runs the
upgrade steps after its version, under an advisory lock so that several processes starting
at once run them once. A table made before versions (no row) runs every step: each one
checks what is there first. A table from a newer release is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from citewell.db.change_listener import notify_on_update
from citewell.errors import StoreError

VERSIONS = "citewell_chunk_tables"


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


def _check_dimension(db: Connection, table: str, dimension: int) -> None:
    found = _attribute(db, table, "atttypmod", "vector")
    if found is not None and found != dimension:
        raise StoreError(
            f"Chunk table {table} holds {found}-dimensional vectors, the embedder makes "
            f"{dimension}; use another database or restore the model."
        )


def _base_tables(db: Connection, table: str, dimension: int) -> None:
    """Version 1: the chunk table with its indexes, and the statistics row."""
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
        f"CREATE TABLE IF NOT EXISTS {table}_stats (one boolean PRIMARY KEY DEFAULT true "
        "CHECK (one), chunks bigint NOT NULL, length bigint NOT NULL, "
        "version bigint NOT NULL DEFAULT 0)",
        f"INSERT INTO {table}_stats VALUES (true, 0, 0) ON CONFLICT DO NOTHING",
    ):
        db.execute(text(statement))


def _stats_version(db: Connection, table: str, dimension: int) -> None:  # noqa: ARG001
    """Version 2: the statistics row counts writes (for in-memory snapshots)."""
    stats = f"{table}_stats"
    if "version" not in columns(db, stats):
        db.execute(text(f"ALTER TABLE {stats} ADD COLUMN version bigint NOT NULL DEFAULT 0"))


def _changes_table(db: Connection, table: str, dimension: int) -> None:  # noqa: ARG001
    """Version 5: the files each write touched, by the version it made, so the machines'
    copies of a big table take writes in without copying it again (memory/changes.py);
    a null file: not known (the copy is made again)."""
    db.execute(
        text(f"CREATE TABLE IF NOT EXISTS {table}_changes (version bigint NOT NULL, file_id text)")
    )
    db.execute(
        text(f"CREATE INDEX IF NOT EXISTS {table}_changes_version ON {table}_changes (version)")
    )
    # changes_from: versions up to it are no longer described (pruned); older copies are
    # made again
    db.execute(
        text(
            f"ALTER TABLE {table}_stats ADD COLUMN IF NOT EXISTS changes_from bigint "
            "NOT NULL DEFAULT 0"
        )
    )


Step = Callable[[Connection, str, int], None]


class KeywordTables(Protocol):
    """What the upgrade steps ask of the BM25 side (bm25.KeywordIndex)."""

    def create_frequencies(self, db: Connection) -> None: ...
    def create_index(self, db: Connection) -> None: ...


def steps(keywords: KeywordTables) -> list[Step]:
    """Every upgrade step, in order: step i brings a table to version i + 1. Step 4 made a
    postings table once; step 6 drops it (bm25.py), so a new table never makes one."""
    return [
        _base_tables,
        _stats_version,
        lambda db, table, _: _keep_vectors_inline(db, table),  # 3: vectors in the rows
        lambda db, _t, _d: keywords.create_frequencies(db),  # 4: document frequencies
        _changes_table,
        lambda db, _t, _d: keywords.create_index(db),  # 6: a GIN index for the postings
    ]


def create_tables(db: Connection, table: str, dimension: int, keywords: KeywordTables) -> int:
    """Bring ``table`` (and ``{table}_stats``, and its keyword tables through ``keywords``)
    to the current version, creating it if new; returns the version it had (0: new or
    unversioned). Version 6 builds a GIN index over the rows' terms: on a big table made by
    an earlier release that takes minutes, once, while the others wait on the lock."""
    db.execute(text("SELECT pg_advisory_xact_lock(hashtext(:t))"), {"t": table})
    _check_dimension(db, table, dimension)
    if not columns(db, VERSIONS):
        db.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {VERSIONS} (name text PRIMARY KEY, "
                "version integer NOT NULL, upgraded_at timestamptz NOT NULL DEFAULT now())"
            )
        )
    found = table_version(db, table)
    upgrades = steps(keywords)
    if found > len(upgrades):
        raise StoreError(
            f"Chunk table {table} has schema version {found}; this Citewell knows up to "
            f"{len(upgrades)}. Upgrade Citewell to the release that wrote it (or newer)."
        )
    for step in upgrades[found:]:
        step(db, table, dimension)
    if found < len(upgrades):
        db.execute(
            text(
                f"INSERT INTO {VERSIONS} (name, version) VALUES (:t, :v) ON CONFLICT (name) "
                "DO UPDATE SET version = excluded.version, upgraded_at = now()"
            ),
            {"t": table, "v": len(upgrades)},
        )
    notify_on_update(db, f"{table}_stats")  # snapshots read the version only after it moved
    return found


def table_version(db: Connection, table: str) -> int:
    """The schema version recorded for ``table``; 0 when none is (new, or made before)."""
    found = db.execute(text(f"SELECT version FROM {VERSIONS} WHERE name = :t"), {"t": table})
    return int(found.scalar() or 0)


def forget_table(db: Connection, table: str) -> None:
    """After the table is dropped: its version goes too."""
    if columns(db, VERSIONS):
        db.execute(text(f"DELETE FROM {VERSIONS} WHERE name = :t"), {"t": table})


def _keep_vectors_inline(db: Connection, table: str) -> None:
    """pgvector stores vectors out of line (TOAST) by default, so comparing a row's vector
    reads a second relation: an exact search over one KB's 7,863 rows of a million took
    60-70 ms so, 20-35 ms with the vectors in the rows. MAIN keeps them in the row unless it
    would not fit a page. Rows written before keep their layout."""
    if _attribute(db, table, "attstorage", "vector") != "m":
        # Checked first: ALTER TABLE would lock out searches meanwhile.
        db.execute(text(f"ALTER TABLE {table} ALTER COLUMN vector SET STORAGE MAIN"))


def analyze_changed(engine: Engine, tables: list[str]) -> None:
    """ANALYZE those of ``tables`` that changed by a tenth since they were last counted
    (or never were)."""
    with engine.connect() as db:
        stale = db.execute(
            text(
                "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(:names) AND "
                "(last_analyze IS NULL AND last_autoanalyze IS NULL "
                "OR n_mod_since_analyze > 0.1 * greatest(n_live_tup, 1000))"
            ),
            {"names": tables},
        ).scalars()
        names = ", ".join(sorted(stale))
    if names:
        with engine.connect() as db:
            db.execution_options(isolation_level="AUTOCOMMIT").execute(text(f"ANALYZE {names}"))
