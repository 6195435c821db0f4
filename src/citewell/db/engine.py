"""Engines: a SQLite file in the data dir by default, or any SQLAlchemy URL (PostgreSQL)."""

from __future__ import annotations

import functools
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url

from citewell.config import Settings
from citewell.errors import ConfigError


def sqlite_engine(path: Path) -> Engine:
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _pragmas(connection, _record):  # type: ignore[no-untyped-def]
        connection.execute("PRAGMA foreign_keys=ON")
        connection.execute("PRAGMA journal_mode=WAL")
        # With WAL, NORMAL loses no commit when the process dies (only on power loss, where a
        # job may run once more; ingestion is idempotent) and halves the cost of each commit.
        connection.execute("PRAGMA synchronous=NORMAL")

    return engine


def url_engine(url: str) -> Engine:
    """An engine for a database URL; ``postgresql://`` uses the psycopg 3 driver."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite":
        return sqlite_engine(Path(parsed.database or ""))
    if parsed.get_backend_name() != "postgresql":
        raise ConfigError(
            f"database_url names {parsed.get_backend_name()}; Citewell runs on SQLite (leave "
            "it empty) or PostgreSQL (postgresql://user:password@host/database)."
        )
    try:
        import psycopg  # noqa: F401
    except ImportError as error:
        raise ConfigError(
            "database_url names PostgreSQL, but its driver is not installed: "
            "pip install 'citewell[postgres]'"
        ) from error
    # No server-side prepared statements: after five runs psycopg would prepare, and
    # PostgreSQL's generic plan for a filtered vector search is a full scan (2 -> 50 ms).
    return create_engine(parsed, pool_pre_ping=True, connect_args={"prepare_threshold": None})


@functools.lru_cache(maxsize=16)
def shared_engine(url: str) -> Engine:
    """One engine (one connection pool) per database URL in a process: the catalog, the
    jobs and the chunk store share it."""
    return url_engine(url)


def open_engine(settings: Settings) -> Engine:
    """The database these settings name (see ``database_url``)."""
    if settings.database_url:
        return shared_engine(settings.database_url)
    return sqlite_engine(settings.data_dir / "citewell.sqlite")


def is_postgres(url: str) -> bool:
    return bool(url) and make_url(url).get_backend_name() == "postgresql"
