"""File rows written many at a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Insert, Table
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from citewell.db.models import Base, FileRow


def table_of(row: type[Base]) -> Table:
    """A mapped class's table. Many rows inserted into the table run no Python a row; into
    the class, SQLAlchemy's ORM bulk path builds each row's parameters in Python."""
    return Base.metadata.tables[row.__tablename__]


def upsert_files(session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert the file rows (column → value), or update those the catalog holds: one
    statement for the batch (a merge read each row first, the most a flush of small files
    cost in the catalog). One row an id, the last given, as merging them one after another
    would leave it."""
    kept = list({row["id"]: dict(row) for row in rows}.values())
    if not kept:
        return
    session.execute(_upsert(session.get_bind().dialect.name, tuple(kept[0])), kept)


@lru_cache(maxsize=8)
def _upsert(dialect: str, columns: tuple[str, ...]) -> Insert:
    """The statement, made once: its ``excluded`` table costs 3 ms to build, as much as
    writing 150 rows."""
    statement = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(table_of(FileRow))
    changed = {column: statement.excluded[column] for column in columns if column != "id"}
    return statement.on_conflict_do_update(index_elements=["id"], set_=changed)
