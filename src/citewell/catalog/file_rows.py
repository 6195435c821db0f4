"""File rows written many at a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.orm import Session

from citewell.db.bulk import insert_rows
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
    insert_rows(session, table_of(FileRow), kept, update_on=("id",))
