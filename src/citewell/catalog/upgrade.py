"""Upgrades of a data dir made by an earlier release, done when the catalog opens. Each step
checks what is there first, so opening again changes nothing."""

from __future__ import annotations

from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.schema import CreateIndex, CreateTable

from citewell.catalog.models import Base, KnowledgeBaseRow


def upgrade(engine: Engine) -> None:
    _add_new_columns(engine)
    _names_unique_per_owner(engine)


def _add_new_columns(engine: Engine) -> None:
    """Columns added since a data dir was created get added to it (each has a server default)."""
    existing = inspect(engine)
    for table in Base.metadata.sorted_tables:
        present = {c["name"] for c in existing.get_columns(table.name)}
        for column in table.columns:
            if column.name not in present and column.server_default is not None:
                default = column.server_default.arg  # type: ignore[attr-defined]
                ddl = column.type.compile(engine.dialect)
                with engine.begin() as connection:
                    connection.execute(
                        text(
                            f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {ddl} '
                            f"NOT NULL DEFAULT '{default}'"
                        )
                    )


def _names_unique_per_owner(engine: Engine) -> None:
    """Knowledge-base names were unique across all users; now per owner. SQLite cannot drop
    a constraint, so the table is rebuilt (its documented way: foreign keys off, copy, drop,
    rename, check), in one transaction."""
    table = Base.metadata.tables[KnowledgeBaseRow.__tablename__]
    uniques = inspect(engine).get_unique_constraints(table.name)
    if not any(u["column_names"] == ["name"] for u in uniques):
        return
    columns = ", ".join(f'"{c.name}"' for c in table.columns)
    create = str(CreateTable(table).compile(engine)).replace(
        f"CREATE TABLE {table.name}", f"CREATE TABLE {table.name}_new", 1
    )
    raw = engine.raw_connection()
    try:
        db = raw.driver_connection
        db.isolation_level = None  # type: ignore[union-attr]  # BEGIN/COMMIT below
        db.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        db.executescript(  # type: ignore[union-attr]
            f"BEGIN; {create};"
            f"INSERT INTO {table.name}_new ({columns}) SELECT {columns} FROM {table.name};"
            f"DROP TABLE {table.name};"
            f"ALTER TABLE {table.name}_new RENAME TO {table.name};"
            + "".join(f"{CreateIndex(i).compile(engine)};" for i in table.indexes)
            + "COMMIT;"
        )
        db.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]
    finally:
        raw.close()
