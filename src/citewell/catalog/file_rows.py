"""File rows written many at a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from citewell.db.models import FileRow


def upsert_files(session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert the file rows (column → value), or update those the catalog holds: one
    statement for the batch (a merge read each row first, the most a flush of small files
    cost in the catalog). One row an id, the last given, as merging them one after another
    would leave it."""
    kept = list({row["id"]: dict(row) for row in rows}.values())
    if not kept:
        return
    name = session.get_bind().dialect.name
    statement = (postgresql_insert if name == "postgresql" else sqlite_insert)(FileRow)
    changed = {column: statement.excluded[column] for column in kept[0] if column != "id"}
    session.execute(statement.on_conflict_do_update(index_elements=["id"], set_=changed), kept)
