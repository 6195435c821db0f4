"""Where the chunk store backend is chosen: the ``store`` setting → a factory (settings, table,
dimension). Nothing outside this module names a backend; each embedding space gets its own
table. Plug-ins: the entry point group ``citewell.chunk_stores``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.machine import memory_bytes, memory_free_bytes
from citewell.plugins import Registry
from citewell.stores.base import ChunkStore

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


def _lancedb(settings: Settings, table: str, dimension: int) -> ChunkStore:
    from citewell.stores.index_policy import VectorIndexPolicy
    from citewell.stores.lance.store import LanceChunkStore

    policy = VectorIndexPolicy(min_rows=settings.storage.vector_index_min_rows)
    return LanceChunkStore(
        settings.storage.data_dir / "lancedb",
        table,
        dimension,
        policy,
        settings.storage.lance_cache_mb,
        kb_snapshot_mb=settings.storage.kb_snapshot_mb,
        table_copy_mb=table_copy_budget_mb(settings),
        memory_free=memory_free_bytes,
        copies_dir=settings.storage.data_dir / "table_copies"
        if settings.storage.table_copy_shared
        else None,
    )


# "auto": a fifth of the machine's memory for the copies of all API processes together. The
# box usually also runs the LLM; a million 384-d chunks fit from a 6 GB machine in a shared
# copy (1.1 GB), from a 17 GB one in a process's own (3.3 GB).
AUTO_TABLE_COPY_SHARE = 5


def table_copy_budget_mb(settings: Settings, memory: int | None = None) -> int:
    """``table_copy_mb`` in megabytes, with "auto" sized by the machine (``memory`` bytes,
    read from it when not given): one copy for the machine when copies are shared, else
    one for each API process."""
    if settings.storage.table_copy_mb != "auto":
        return settings.storage.table_copy_mb
    total = memory_bytes() if memory is None else memory
    holders = 1 if settings.storage.table_copy_shared else settings.server.workers
    return total // AUTO_TABLE_COPY_SHARE // holders >> 20


def _postgres(settings: Settings, table: str, dimension: int) -> ChunkStore:
    from citewell.db.engine import is_postgres, shared_engine
    from citewell.db.schema import ensure_vector_extension
    from citewell.stores.postgres.store import PostgresChunkStore

    if not is_postgres(settings.storage.database_url):
        raise ConfigError(
            "store = postgres keeps chunks in the database: set database_url to a "
            "postgresql://user:password@host/database URL (with the pgvector extension)."
        )
    engine = shared_engine(settings.storage.database_url)
    ensure_vector_extension(engine)
    shared = settings.storage.table_copy_shared
    return PostgresChunkStore(
        engine, table, dimension, settings.storage.vector_index_min_rows,
        table_copy_mb=table_copy_budget_mb(settings),
        copies_dir=settings.storage.data_dir / "table_copies" if shared else None,
        memory_free=memory_free_bytes, replica=_replica(settings),
        kb_copy_mb=settings.storage.kb_snapshot_mb,
    )  # fmt: skip


def _replica(settings: Settings) -> Engine | None:
    """The engine of ``database_read_url``, if set."""
    from citewell.db.engine import is_postgres, shared_engine

    url = settings.storage.database_read_url
    if not url:
        return None
    if not is_postgres(url):
        raise ConfigError(
            "database_read_url names a streaming replica of database_url: a "
            "postgresql://user:password@host/database URL (or leave it empty)."
        )
    return shared_engine(url)


CHUNK_STORES: Registry[Callable[[Settings, str, int], ChunkStore]] = Registry("chunk_stores")
CHUNK_STORES.add("lancedb", _lancedb)
CHUNK_STORES.add("postgres", _postgres)


def store_backend(settings: Settings) -> str:
    """``store``, with "auto" resolved: PostgreSQL when the database is, else LanceDB."""
    from citewell.db.engine import is_postgres

    if settings.storage.store != "auto":
        return settings.storage.store
    return "postgres" if is_postgres(settings.storage.database_url) else "lancedb"


def open_chunk_store(settings: Settings, table: str, dimension: int) -> ChunkStore:
    """The chunk table of one embedding space (created empty if new)."""
    return CHUNK_STORES.get(store_backend(settings))(settings, table, dimension)
