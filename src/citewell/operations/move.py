"""`citewell migrate --to postgresql://…`: an embedded data dir moved into PostgreSQL.

Everything the SQLite catalog holds (knowledge bases, files, links, jobs and their history,
users, keys, groups, grants, audit, presets, embedding spaces), the embedding cache, and the
chunks of every live embedding space with their vectors and terms: nothing is parsed or
embedded again. Stored originals stay in the data dir's ``files/`` unless the command also
copies them into a bucket (``--files-to``, operations/copy_files.py).

The target must be empty (``force`` empties it first), so a re-run after a failure simply
starts over. Afterwards counts are compared table by table and a sample of searches must
find the same chunks in both stores.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Table, delete, func, insert, select, text
from sqlalchemy.engine import Connection, Engine

from citewell.catalog.spaces import RETIRED, SpaceRegistry
from citewell.config import Settings
from citewell.db import ensure_schema, sqlite_engine
from citewell.db.engine import url_engine
from citewell.db.models import Base
from citewell.embedders.cache import DatabaseEmbeddingCache, EmbeddingCache
from citewell.errors import ConfigError, StoreError
from citewell.ingest.chunk_rows import sentence_table
from citewell.stores.base import ChunkStore, exporting, scanning
from citewell.stores.postgres.store import PostgresChunkStore
from citewell.stores.registry import open_chunk_store
from citewell.types import ChunkFilter

ROWS_PER_INSERT = 2000
SKIPPED = {"rate_buckets", "embedding_cache", "change_counter"}  # live counters; the cache apart


@dataclass
class MoveReport:
    tables: dict[str, int] = field(default_factory=dict)  # rows copied per table
    chunks: dict[str, int] = field(default_factory=dict)  # per embedding space
    cached_vectors: int = 0
    searches_checked: int = 0
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


class Move:
    def __init__(self, settings: Settings, target_url: str, say: Callable[[str], None]) -> None:
        if settings.storage.database_url:
            raise ConfigError("This data dir already uses a database_url; nothing to move.")
        if not target_url.startswith(("postgresql://", "postgresql+psycopg://")):
            raise ConfigError("--to takes a PostgreSQL URL: postgresql://user:pass@host/db")
        source_path = settings.storage.data_dir / "citewell.sqlite"
        if not source_path.exists():
            raise ConfigError(f"No Citewell data in {settings.storage.data_dir}; check --data-dir.")
        self.settings, self.say = settings, say
        self.source, self.target = sqlite_engine(source_path), url_engine(target_url)
        ensure_schema(self.source)  # a data dir of an older release: up to date first
        ensure_schema(self.target)

    def run(self, force: bool) -> MoveReport:
        self._make_room(force)
        report = MoveReport()
        for table in Base.metadata.sorted_tables:
            if table.name not in SKIPPED:
                report.tables[table.name] = self._copy_table(table)
        report.cached_vectors = self._copy_cache()
        for record in SpaceRegistry(self.source).all():
            if record.state != RETIRED:
                for name in (record.id, sentence_table(record.id)):
                    report.chunks[name] = self._copy_chunks(name, record.dimension)
        self._verify(report)
        return report

    def _make_room(self, force: bool) -> None:
        with self.target.connect() as db:
            used = {t.name: db.scalar(select(func.count()).select_from(t)) for t in _tables()}
        if any(used.values()) and not force:
            filled = ", ".join(f"{n} ({c})" for n, c in used.items() if c)
            raise ConfigError(
                f"The target database is not empty: {filled}. Use another database, or "
                "--force to empty it first (everything in it is deleted)."
            )
        with self.target.begin() as db:
            for table in reversed(Base.metadata.sorted_tables):
                db.execute(delete(table))
        for record in SpaceRegistry(self.source).all():
            for table in (record.id, sentence_table(record.id)):
                PostgresChunkStore(self.target, table, record.dimension).drop()

    def _copy_table(self, table: Table) -> int:
        with self.source.connect() as source:
            rows = [dict(r._mapping) for r in source.execute(select(table))]
        with self.target.begin() as db:
            for i in range(0, len(rows), ROWS_PER_INSERT):
                db.execute(insert(table), rows[i : i + ROWS_PER_INSERT])
            _advance_sequences(db, table)
        self.say(f"{table.name}: {len(rows)} rows")
        return len(rows)

    def _copy_cache(self) -> int:
        path = self.settings.storage.data_dir / "embeddings.sqlite"
        if not path.exists():
            return 0
        source, target = EmbeddingCache(path), DatabaseEmbeddingCache(self.target)
        copied = 0
        try:
            for model, hashes, vectors in source.export():
                target.put(model, hashes, vectors)
                copied += len(hashes)
        finally:
            source.close()
        self.say(f"embedding cache: {copied} vectors")
        return copied

    def _copy_chunks(self, table: str, dimension: int) -> int:
        opened = open_chunk_store(self.settings, table, dimension)
        source = exporting(opened)
        if source is None:
            raise StoreError(f"{type(opened).__name__} cannot hand out its chunks to move them.")
        target = PostgresChunkStore(self.target, table, dimension)
        copied = 0
        for batch in source.export():
            copied += target.upsert(batch)
            self.say(f"chunks of {table}: {copied}")
        target.optimize()
        return copied

    def _verify(self, report: MoveReport) -> None:
        for table in _tables():
            if (
                table.name in report.tables
                and _count(self.target, table) != report.tables[table.name]
            ):
                report.mismatches.append(f"{table.name}: row counts differ")
        active = SpaceRegistry(self.source).active()
        if active is None:
            return
        old = open_chunk_store(self.settings, active.id, active.dimension)
        new = PostgresChunkStore(self.target, active.id, active.dimension)
        if old.count(ChunkFilter()) != new.count(ChunkFilter()):
            report.mismatches.append(f"{active.id}: chunk counts differ")
        self._sample_searches(old, new, report)

    def _sample_searches(
        self, old: ChunkStore, new: PostgresChunkStore, report: MoveReport
    ) -> None:
        """Sampled chunks' own terms and vectors find equally good best chunks in both
        stores (scores compared, so ties between identical chunks do not count)."""
        chunks = scanning(old).scan(ChunkFilter())
        for chunk in random.Random(7).sample(chunks, min(20, len(chunks))):
            everything = ChunkFilter()
            query = " ".join(chunk.terms.split()[:12])
            pairs = [
                (old.vector_search(v, 1, everything), new.vector_search(v, 1, everything))
                for v in new.vectors([chunk.id])
            ]
            if query:
                pairs.append(
                    (
                        old.keyword_search(query, 1, everything),
                        new.keyword_search(query, 1, everything),
                    )
                )
            for mine, theirs in pairs:
                report.searches_checked += 1
                if [round(h.score, 3) for h in mine] != [round(h.score, 3) for h in theirs]:
                    report.mismatches.append(f"a search for chunk {chunk.id} differs")


def _advance_sequences(db: Connection, table: Table) -> None:
    """Serial ids continue after the copied ones. Rows went in with their own ids, which
    PostgreSQL's sequences do not see: the next audit event would take id 1 again and fail
    as a duplicate, breaking every audited action after a move."""
    column = table.autoincrement_column
    if column is None:
        return
    db.execute(
        text(
            "SELECT setval(pg_get_serial_sequence(:table, :column), "
            f"COALESCE(MAX({column.name}), 1), MAX({column.name}) IS NOT NULL) "
            f"FROM {table.name}"
        ),
        {"table": table.name, "column": column.name},
    )


def _tables() -> list[Table]:
    return [t for t in Base.metadata.sorted_tables if t.name not in SKIPPED]


def _count(engine: Engine, table: Table) -> int:
    with engine.connect() as db:
        return int(db.scalar(select(func.count()).select_from(table)) or 0)
