"""How server mode tells that an in-memory KB copy is still current (memory/kb_copies.py
has the copies themselves).

Every write notes the files it touched at the version it made (``<table>_changes``,
postgres/changes.py). So a copy made at version v holds exactly its filter's rows at a
later version when no file written since v had a row in the copy, nor has a row in its
KBs now: a read of the change log since v and one indexed lookup of those files' rows,
in the same repeatable-read transaction as the version (on the replica when it has
replayed the table's latest version, as the whole table's copy is read). A copy is read
from the table by its KBs (the GIN index over ``kb_ids``), at most ``max_rows`` rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace

from sqlalchemy import text
from sqlalchemy.engine import Connection

from citewell.stores.memory.kb_copies import KbCopy, Key
from citewell.stores.memory.snapshot import TableSnapshot
from citewell.stores.postgres.changes import ChangeLog
from citewell.stores.postgres.snapshot import PostgresSnapshotSource


class PostgresKbSource:
    """KB copies of ``source``'s table, each of at most ``max_rows`` rows."""

    def __init__(self, source: PostgresSnapshotSource, max_rows: int) -> None:
        self._source, self._max_rows = source, max_rows
        self._changes = ChangeLog(source.table)

    def version(self) -> int:
        return self._source.version()  # from memory until a notification moves it

    @contextlib.contextmanager
    def view(self) -> Iterator[PostgresKbView]:
        with self._source.repeatable() as db:
            yield PostgresKbView(db, self._source, self._changes, self._max_rows)


class PostgresKbView:
    def __init__(
        self, db: Connection, source: PostgresSnapshotSource, changes: ChangeLog, max_rows: int
    ) -> None:
        self._db, self._source, self._changes, self._max_rows = db, source, changes, max_rows
        stats = source.stats
        self.version = int(db.execute(text(f"SELECT version FROM {stats}")).scalar_one())
        self._written: dict[int, set[str] | None] = {}  # files written after a version

    def keep(self, copies: dict[Key, KbCopy]) -> dict[Key, KbCopy]:
        kept: dict[Key, KbCopy] = {}
        for key, copy in copies.items():
            if copy.covers == self.version:
                kept[key] = copy
            elif copy.covers < self.version and self._unchanged(key, copy):
                kept[key] = replace(copy, covers=self.version)
        return kept

    def _unchanged(self, key: Key, copy: KbCopy) -> bool:
        if copy.covers not in self._written:
            self._written[copy.covers] = self._changes.files_after(self._db, copy.covers)
        files = self._written[copy.covers]
        if files is None:
            return False  # not known what was written: read it again
        if not files:
            return True
        if (copy.snapshot.files.names.find(sorted(files)) >= 0).any():
            return False  # rows of its own written, deleted or linked elsewhere
        found = self._db.execute(
            text(
                f"SELECT EXISTS (SELECT 1 FROM {self._source.table} WHERE "
                "file_id = ANY(CAST(:files AS text[])) AND kb_ids && CAST(:kbs AS text[]))"
            ),
            {"files": sorted(files), "kbs": sorted(key)},
        ).scalar_one()
        return not found  # rows added to its KBs (written, or linked to them)?

    def load(self, key: Key) -> KbCopy | None:
        kbs = sorted(key)
        rows = self._db.execute(
            text(
                f"SELECT count(*) FROM (SELECT 1 FROM {self._source.table} "
                "WHERE kb_ids && CAST(:kbs AS text[]) LIMIT :most) s"
            ),
            {"kbs": kbs, "most": self._max_rows},
        ).scalar_one()
        if not 0 < rows < self._max_rows:
            return None  # none, or as many as the whole table's copy serves well
        data = self._source.read(self._db, " WHERE kb_ids && %s::text[]", [kbs])
        snapshot = TableSnapshot.from_arrow(self.version, data, self._source.dimension)
        return KbCopy(key, snapshot, self.version)
