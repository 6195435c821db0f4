"""The upgrades of a SQLite database that cannot run inside a migration.

SQLite cannot drop a constraint, so a table losing one is rebuilt its documented way
(foreign keys off, copy, drop, rename), which needs foreign keys switched off, and SQLite
ignores that switch inside a transaction: with them on, dropping the old table would
cascade-delete every file link (or fail on them). Two such changes:

- Knowledge-base names were unique across all users; now they are unique per owner
  (before the migrations: ``prepare_sqlite``).
- File hashes were unique across all users; now per tenant (revision 0011 adds the
  (tenant, sha256) index; ``relax_file_hashes`` drops the old constraint after it).

Everything else a pre-migration data dir needs is in the baseline revision.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.schema import CreateIndex, CreateTable

# The table as the baseline revision defines it (frozen here for the same reason).
_META = sa.MetaData()
KNOWLEDGE_BASES = sa.Table(
    "knowledge_bases",
    _META,
    sa.Column("id", sa.String(length=32), nullable=False),
    sa.Column("name", sa.String(length=200), nullable=False),
    sa.Column("description", sa.Text(), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.Column("updated_at", sa.Float(), nullable=False),
    sa.Column("owner_id", sa.String(length=32), server_default="", nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("owner_id", "name", name="uq_kb_owner_name"),
    sa.Index("ix_knowledge_bases_name", "name", unique=False),
)


def prepare_sqlite(engine: Engine) -> None:
    """Rebuild a pre-migration ``knowledge_bases`` table whose names are globally unique."""
    inspector = sa.inspect(engine)
    tables = set(inspector.get_table_names())
    if "alembic_version" in tables or "knowledge_bases" not in tables:
        return
    uniques = inspector.get_unique_constraints("knowledge_bases")
    if not any(u["column_names"] == ["name"] for u in uniques):
        return
    present = {c["name"] for c in inspector.get_columns("knowledge_bases")}
    columns = ", ".join(f'"{c.name}"' for c in KNOWLEDGE_BASES.columns if c.name in present)
    create = str(CreateTable(KNOWLEDGE_BASES).compile(engine)).replace(
        "CREATE TABLE knowledge_bases", "CREATE TABLE knowledge_bases_new", 1
    )
    index = CreateIndex(next(iter(KNOWLEDGE_BASES.indexes))).compile(engine)
    _rebuild(engine, "knowledge_bases", create, columns, [str(index)])


def relax_file_hashes(engine: Engine) -> None:
    """Drop ``UNIQUE (sha256)`` from ``files``: identical bytes may now be one file per
    tenant (revision 0011 made the (tenant, sha256) index that replaces it)."""
    with engine.connect() as db:
        found = db.execute(sa.text(FILES_SQL + "AND type = 'table'")).scalar()
        # Dropping the table drops its indexes and the change counter's triggers: made again.
        others = db.execute(sa.text(FILES_SQL + "AND type IN ('index', 'trigger')"))
        indexes = list(others.scalars())
    if found is None or not GLOBAL_SHA.search(found):
        return
    create = GLOBAL_SHA.sub("", found).replace("CREATE TABLE files", "CREATE TABLE files_new", 1)
    columns = ", ".join(f'"{c["name"]}"' for c in sa.inspect(engine).get_columns("files"))
    _rebuild(engine, "files", create, columns, indexes)


GLOBAL_SHA = re.compile(r",\s*UNIQUE\s*\(\s*sha256\s*\)")
FILES_SQL = "SELECT sql FROM sqlite_master WHERE tbl_name = 'files' AND sql IS NOT NULL "


def _rebuild(engine: Engine, table: str, create: str, columns: str, indexes: list[str]) -> None:
    """Make ``table`` anew from ``create`` (of ``{table}_new``), rows and all, then its
    ``indexes`` (and triggers), in one transaction with foreign keys off (see above)."""
    new = f"{table}_new"
    raw = engine.raw_connection()
    try:
        db = raw.driver_connection
        db.isolation_level = None  # type: ignore[union-attr]  # BEGIN/COMMIT below
        db.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        db.executescript(  # type: ignore[union-attr]
            f"BEGIN; {create};"
            f"INSERT INTO {new} ({columns}) SELECT {columns} FROM {table};"
            f"DROP TABLE {table}; ALTER TABLE {new} RENAME TO {table};"
            + "".join(f"{statement};" for statement in indexes)
            + "COMMIT;"
        )
    finally:
        # Closed, not pooled: in autocommit with foreign keys off, every later "transaction"
        # on it would commit each statement alone (and a failed script left one open).
        raw.invalidate()
