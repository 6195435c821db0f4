"""``<table>_changes``: which files each write to a PostgreSQL chunk table touched, by the
version it made (decision 0033). Every write moves the statistics row's version on and
notes its files in its own transaction (``written``); writers take turns on that row, so
versions commit in order. The copies of the table (postgres/snapshot.py) read the notes
to take the writes since they were made; ``optimize`` prunes them to the newest
``KEPT_VERSIONS``, the statistics row's ``changes_from`` saying from which version on
they are all there."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

KEPT_VERSIONS = 20_000  # writes whose files are kept; an older copy is made again


class ChangeLog:
    def __init__(self, table: str) -> None:
        self.table, self.stats = f"{table}_changes", f"{table}_stats"

    def written(self, db: Connection, chunks: int, length: int, files: Iterable[str]) -> None:
        """A write (in its transaction): the statistics row counts the rows and terms it
        added (negative: removed) and moves the table's version on, and the files it
        touched are noted at that version."""
        db.execute(
            text(
                f"UPDATE {self.stats} SET chunks = chunks + :c, length = length + :l, "
                "version = version + 1"
            ),
            {"c": chunks, "l": length},
        )
        db.execute(
            text(
                f"INSERT INTO {self.table} (version, file_id) SELECT s.version, f "
                f"FROM {self.stats} s, unnest(CAST(:files AS text[])) f"
            ),
            {"files": sorted(files)},
        )

    def files_after(self, db: Connection, version: int) -> set[str] | None:
        """The files written after ``version``; None when not known (a write of files not
        known, or versions after it no longer all described)."""
        kept_from = db.execute(text(f"SELECT changes_from FROM {self.stats}")).scalar_one()
        if version < kept_from:
            return None
        found = db.execute(
            text(f"SELECT DISTINCT file_id FROM {self.table} WHERE version > :v"), {"v": version}
        ).scalars()
        files = set(found)
        return None if None in files else files

    def prune(self, engine: Engine, keep: int = KEPT_VERSIONS) -> None:
        """Drop the changes of all but the newest ``keep`` versions."""
        with engine.begin() as db:
            version, kept_from = db.execute(
                text(f"SELECT version, changes_from FROM {self.stats}")
            ).one()
            prune_to = version - keep
            if prune_to <= kept_from:
                return
            db.execute(text(f"SELECT 1 FROM {self.stats} FOR UPDATE"))  # beside writers
            db.execute(text(f"DELETE FROM {self.table} WHERE version <= :v"), {"v": prune_to})
            db.execute(text(f"UPDATE {self.stats} SET changes_from = :v"), {"v": prune_to})
