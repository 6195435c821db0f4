"""The one upgrade of a pre-migration SQLite data dir that cannot run inside a migration.

Knowledge-base names were unique across all users; now they are unique per owner. SQLite
cannot drop a constraint, so the table is rebuilt its documented way (foreign keys off, copy,
drop, rename), which needs foreign keys switched off, and SQLite ignores that switch inside a
transaction: with them on, dropping the old table would cascade-delete every file link.
Everything else a pre-migration data dir needs is in the baseline revision.
"""

from __future__ import annotations

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
    raw = engine.raw_connection()
    try:
        db = raw.driver_connection
        db.isolation_level = None  # type: ignore[union-attr]  # BEGIN/COMMIT below
        db.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        db.executescript(  # type: ignore[union-attr]
            f"BEGIN; {create};"
            f"INSERT INTO knowledge_bases_new ({columns}) SELECT {columns} FROM knowledge_bases;"
            "DROP TABLE knowledge_bases;"
            "ALTER TABLE knowledge_bases_new RENAME TO knowledge_bases;"
            f"{index}; COMMIT;"
        )
        db.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]
    finally:
        raw.close()
