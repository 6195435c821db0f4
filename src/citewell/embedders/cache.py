"""A content-hash cache: the same text is never embedded twice for the same model.

Keyed by (model id, sha256 of the text), stored in SQLite in the data dir, so it holds across
files, knowledge bases and re-ingests.

Within one tenant only: a hit answers faster and embeds nothing, so a cache shared by all
users would tell one whether another had stored a guessed sentence. The tenant is the owner
of the KB written to (or the caller, for a query or /v1/embeddings), set around the work
with ``embedding_tenant``; its id goes into the hash. Work with no tenant (the CLI, a server
without authentication, model switches) keeps the plain hash. ``share_embeddings`` turns
tenants off for a one-team server (decision 0020).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine

from citewell.embedders.base import Embedder, Vectors
from citewell.metrics import count_cache, count_embedding
from citewell.sqlite_wal import use_wal
from citewell.types import EmbedKind

logger = logging.getLogger(__name__)


class VectorCache(Protocol):
    """Where embeddings are kept by (model id, text hash): a SQLite file or the database."""

    def get(self, model: str, hashes: Sequence[str]) -> dict[str, Vectors]: ...

    def put(self, model: str, hashes: Sequence[str], vectors: Vectors) -> None: ...

    def forget(self, model: str) -> int: ...

    def close(self) -> None: ...


def text_hash(text: str, tenant: str = "") -> str:
    keyed = f"{tenant}\0{text}" if tenant else text
    return hashlib.sha256(keyed.encode("utf-8")).hexdigest()


_TENANT: ContextVar[str] = ContextVar("citewell_embedding_tenant", default="")


@contextmanager
def embedding_tenant(tenant: str) -> Iterator[None]:
    """Embeddings made or looked up in this block are the tenant's own (a user id)."""
    token = _TENANT.set(tenant)
    try:
        yield
    finally:
        _TENANT.reset(token)


# A rowid table keyed by a unique index: 1.5 KB rows in a WITHOUT ROWID table (the layout
# before) cost 62-69 µs a row to write against 22-26 (journal, "The split on by default").
EMBEDDINGS_TABLE = (
    "CREATE TABLE embeddings (model TEXT NOT NULL, hash TEXT NOT NULL, "
    "vector BLOB NOT NULL, UNIQUE (model, hash))"
)
COPY_WAIT_MS = 600_000  # another process may be copying a big cache into the new layout


def _prepare_table(db: sqlite3.Connection) -> None:
    """The table, made if missing; a cache of the layout before is copied into it once.
    In one write transaction: processes starting together wait for the first one's copy."""
    db.execute(f"PRAGMA busy_timeout = {COPY_WAIT_MS}")
    try:
        db.execute("BEGIN IMMEDIATE")
    finally:
        db.execute("PRAGMA busy_timeout = 5000")
    try:
        found = db.execute("SELECT sql FROM sqlite_master WHERE name = 'embeddings'").fetchone()
        if found is None:
            db.execute(EMBEDDINGS_TABLE)
        elif "WITHOUT ROWID" in found[0].upper():
            _copy_to_new_layout(db)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _copy_to_new_layout(db: sqlite3.Connection) -> None:
    began = time.monotonic()
    logger.info("Copying the embedding cache into its new layout, once (about a minute a "
                "million vectors).")  # fmt: skip
    db.execute("ALTER TABLE embeddings RENAME TO embeddings_before")
    db.execute(EMBEDDINGS_TABLE)
    db.execute("INSERT INTO embeddings SELECT model, hash, vector FROM embeddings_before")
    db.execute("DROP TABLE embeddings_before")
    logger.info("Embedding cache copied in %.0f s.", time.monotonic() - began)


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        use_wal(self._db, COPY_WAIT_MS / 1000)
        _prepare_table(self._db)
        self._lock = threading.Lock()

    def get(self, model: str, hashes: Sequence[str]) -> dict[str, Vectors]:
        found: dict[str, Vectors] = {}
        unique = list(dict.fromkeys(hashes))
        with self._lock:
            for i in range(0, len(unique), 500):
                part = unique[i : i + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT hash, vector FROM embeddings WHERE model = ? AND hash IN ({marks})",
                    (model, *part),
                )
                found.update((h, np.frombuffer(v, dtype=np.float32)) for h, v in rows)
        return found

    def put(self, model: str, hashes: Sequence[str], vectors: Vectors) -> None:
        pairs = zip(hashes, vectors, strict=True)
        rows = [(model, h, v.astype(np.float32).tobytes()) for h, v in pairs]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
            self._db.execute("COMMIT")

    def forget(self, model: str) -> int:
        """Drop every vector of one model (its embedding space is gone); returns how many."""
        with self._lock:
            return self._db.execute("DELETE FROM embeddings WHERE model = ?", (model,)).rowcount

    def export(self, batch: int = 5000) -> Iterator[tuple[str, list[str], Vectors]]:
        """Every cached vector as (model, hashes, vectors), ``batch`` rows at a time."""
        with self._lock:
            models = [m for (m,) in self._db.execute("SELECT DISTINCT model FROM embeddings")]
        for model in models:
            after = ""
            while True:
                with self._lock:
                    rows = self._db.execute(
                        "SELECT hash, vector FROM embeddings WHERE model = ? AND hash > ? "
                        "ORDER BY hash LIMIT ?",
                        (model, after, batch),
                    ).fetchall()
                if not rows:
                    break
                after = rows[-1][0]
                vectors = np.vstack([np.frombuffer(v, dtype=np.float32) for _, v in rows])
                yield model, [h for h, _ in rows], vectors

    def close(self) -> None:
        self._db.close()


class DatabaseEmbeddingCache:
    """The same cache in the application database (PostgreSQL in server mode), so API and
    worker processes on any host share it."""

    def __init__(self, engine: Engine) -> None:
        from citewell.db import ensure_schema
        from citewell.db.models import Base, EmbeddingCacheRow

        ensure_schema(engine)
        self.engine = engine
        self.table = Base.metadata.tables[EmbeddingCacheRow.__tablename__]

    def get(self, model: str, hashes: Sequence[str]) -> dict[str, Vectors]:
        found: dict[str, Vectors] = {}
        unique = list(dict.fromkeys(hashes))
        columns = self.table.c
        with self.engine.connect() as db:
            for i in range(0, len(unique), 500):
                query = select(columns.hash, columns.vector).where(
                    (columns.model == model) & columns.hash.in_(unique[i : i + 500])
                )
                found.update((h, np.frombuffer(v, dtype=np.float32)) for h, v in db.execute(query))
        return found

    def put(self, model: str, hashes: Sequence[str], vectors: Vectors) -> None:
        rows = [
            {"model": model, "hash": h, "vector": v.astype(np.float32).tobytes()}
            for h, v in dict(zip(hashes, vectors, strict=True)).items()
        ]
        if not rows:
            return
        dialect = self.engine.dialect.name
        insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
        # Two workers may embed the same text at once: the first write wins, both are equal.
        statement = insert(self.table).on_conflict_do_nothing()
        with self.engine.begin() as db:
            db.execute(statement, rows)

    def forget(self, model: str) -> int:
        with self.engine.begin() as db:
            return int(db.execute(delete(self.table).where(self.table.c.model == model)).rowcount)

    def close(self) -> None:
        """The engine is shared with the rest of the application: nothing to close."""


QUERY_CACHE_SIZE = 4096  # recent query vectors kept in memory (1.5 KB each)


class CachedEmbedder:
    """Wraps an embedder: document embeddings go through the persistent cache; single
    queries through a small in-memory one (dashboards and retries repeat the same query)."""

    def __init__(self, inner: Embedder, cache: VectorCache, shared: bool = False) -> None:
        self.inner = inner
        self.cache = cache
        self.shared = shared  # one cache for every tenant (share_embeddings)
        self.model_id = inner.model_id
        self.embedded = 0  # texts actually sent to the model since construction
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        self._queries_lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> Vectors:
        if kind == "query" and len(texts) == 1:
            return self._query(texts[0])
        if kind == "query" or not texts:
            return self._encoded(texts, kind)
        tenant = self._tenant()
        hashes = [text_hash(t, tenant) for t in texts]
        known = self.cache.get(self.model_id, hashes)
        missing = {h: t for h, t in zip(hashes, texts, strict=False) if h not in known}
        count_cache("document", len(hashes) - len(missing), len(missing))
        if missing:
            fresh = self._encoded(list(missing.values()), "document")
            self.cache.put(self.model_id, list(missing), fresh)
            known.update(zip(missing, fresh, strict=False))
            self.embedded += len(missing)
        return np.vstack([known[h] for h in hashes]).astype(np.float32)

    def _encoded(self, texts: Sequence[str], kind: EmbedKind) -> Vectors:
        """The model's vectors, timed and counted for /metrics."""
        began = time.perf_counter()
        vectors = self.inner.embed(texts, kind)
        count_embedding(kind, len(texts), time.perf_counter() - began)
        return vectors

    def _tenant(self) -> str:
        return "" if self.shared else _TENANT.get()

    def _query(self, text: str) -> Vectors:
        key = f"{self._tenant()}\0{text}"
        with self._queries_lock:
            vector = self._queries.get(key)
            if vector is not None:
                self._queries.move_to_end(key)
                count_cache("query", 1, 0)
                return vector.copy()
        count_cache("query", 0, 1)
        vector = self._encoded([text], "query")
        with self._queries_lock:
            self._queries[key] = vector
            while len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector.copy()
