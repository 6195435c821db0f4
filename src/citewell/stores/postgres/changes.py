"""``<table>_changes``: which files each write to a PostgreSQL chunk table touched, by the
version it made (decision 0033). Written in the write's own transaction, after the
statistics row's version moved (writers take turns on that row, so versions commit in
order); read by the copies of the table (postgres/snapshot.py) to take the writes since
they were made; pruned to the newest ``KEPT_VERSIONS`` by ``optimize``, the statistics
row's ``changes_from`` saying from which version on they are all there."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

KEPT_VERSIONS = 20_000  # writes whose files are kept; an older copy is made again


class ChangeLog:
    def __init__(self, table: str) -> None:
        self.table, self.stats = f"{table}_changes", f"{table}_stats"

    def note(self, db: Connection, files: Iterable[str]) -> None:
        """The files a write touched, at the version it just made (in its transaction)."""
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
