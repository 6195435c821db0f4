"""Where the chunk store backend is chosen: the ``store`` setting → a factory. Nothing
outside this module names a backend; each embedding space gets its own table."""

from __future__ import annotations

from collections.abc import Callable

from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.stores.base import ChunkStore


def _lancedb(settings: Settings, table: str, dimension: int) -> ChunkStore:
    from citewell.stores.lance_upkeep import VectorIndexPolicy
    from citewell.stores.lancedb import LanceChunkStore

    policy = VectorIndexPolicy(min_rows=settings.vector_index_min_rows)
    return LanceChunkStore(
        settings.data_dir / "lancedb",
        table,
        dimension,
        policy,
        settings.lance_cache_mb,
        kb_snapshot_mb=settings.kb_snapshot_mb,
        table_copy_mb=settings.table_copy_mb,
    )


def _postgres(settings: Settings, table: str, dimension: int) -> ChunkStore:
    from citewell.db.engine import is_postgres, shared_engine
    from citewell.stores.postgres import PostgresChunkStore

    if not is_postgres(settings.database_url):
        raise ConfigError(
            "store = postgres keeps chunks in the database: set database_url to a "
            "postgresql://user:password@host/database URL (with the pgvector extension)."
        )
    engine = shared_engine(settings.database_url)
    return PostgresChunkStore(engine, table, dimension, settings.vector_index_min_rows)


CHUNK_STORES: dict[str, Callable[[Settings, str, int], ChunkStore]] = {
    "lancedb": _lancedb,
    "postgres": _postgres,
}


def store_backend(settings: Settings) -> str:
    """``store``, with "auto" resolved: PostgreSQL when the database is, else LanceDB."""
    from citewell.db.engine import is_postgres

    if settings.store != "auto":
        return settings.store
    return "postgres" if is_postgres(settings.database_url) else "lancedb"


def open_chunk_store(settings: Settings, table: str, dimension: int) -> ChunkStore:
    """The chunk table of one embedding space (created empty if new)."""
    return CHUNK_STORES[store_backend(settings)](settings, table, dimension)
