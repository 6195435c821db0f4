"""Engines: a SQLite file in the data dir by default, or any SQLAlchemy URL (PostgreSQL)."""

from __future__ import annotations

import functools
import time
from pathlib import Path

from sqlalchemy import create_engine, event, exc
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker

from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.sqlite_wal import use_wal

WAL_WAIT_SECONDS = 30.0  # another process may be creating the file's tables
CACHE_KIB = 32 * 1024  # SQLite's page cache of each connection
CHECKPOINT_PAGES = 10_000  # of 4 KB: the write-ahead log's size that starts a checkpoint


def sqlite_engine(path: Path) -> Engine:
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _pragmas(connection, _record):  # type: ignore[no-untyped-def]
        connection.execute("PRAGMA foreign_keys=ON")
        use_wal(connection, WAL_WAIT_SECONDS)
        # With WAL, NORMAL loses no commit when the process dies (only on power loss, where a
        # job may run once more; ingestion is idempotent) and halves the cost of each commit.
        connection.execute("PRAGMA synchronous=NORMAL")
        # 32 MB of pages a connection instead of SQLite's 2 MB: the files' and links' key
        # indexes of a catalog of 100,000 files (random ids) outgrow 2 MB, and each insert
        # then read its pages back from the OS. Pages are taken as used.
        connection.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        # Checkpoints (the commit that copies the log into the file, and syncs it) after
        # 40 MB of log instead of 4: an import's batch of 1,600 files filled 4 MB, so each
        # commit checkpointed. Adding 100,000 files: 3.9-4.2 s against 5.2-5.5.
        connection.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")

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
    engine = create_engine(parsed, connect_args={"prepare_threshold": None})
    _ping_when_idle(engine)
    return engine


IDLE_PING_SECONDS = 5.0


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection before use only if it sat idle for a while: a database
    restart or an idle timeout ends those, while one handed back milliseconds ago is alive.
    SQLAlchemy's pool_pre_ping pings on every checkout, and a retrieval checks out about a
    dozen times: a round trip each, on top of each statement's. A connection that fails
    the ping is replaced (DisconnectionError); one that breaks in use invalidates the pool,
    as SQLAlchemy does for any disconnect."""

    @event.listens_for(engine, "checkin")
    def _idle_from(_connection, record):  # type: ignore[no-untyped-def]
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping(connection, record, _proxy):  # type: ignore[no-untyped-def]
        if time.monotonic() - record.info.get("idle_since", 0.0) < IDLE_PING_SECONDS:
            return
        try:
            connection.execute("SELECT 1")
            connection.rollback()
        except Exception as error:  # noqa: BLE001 - any failure: give the pool a new one
            raise exc.DisconnectionError(str(error)) from error


@functools.lru_cache(maxsize=16)
def shared_engine(url: str) -> Engine:
    """One engine (one connection pool) per database URL in a process: the catalog, the
    jobs and the chunk store share it."""
    return url_engine(url)


def open_engine(settings: Settings) -> Engine:
    """The database these settings name (see ``database_url``)."""
    if settings.storage.database_url:
        return shared_engine(settings.storage.database_url)
    return sqlite_engine(settings.storage.data_dir / "citewell.sqlite")


def read_sessions(engine: Engine) -> sessionmaker[Session]:
    """Sessions for reads, each statement on its own (no BEGIN before and ROLLBACK after:
    two round trips fewer per read; a retrieval makes a dozen). Never write through them:
    without a transaction, statements commit one by one."""
    return sessionmaker(
        engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False
    )


def is_postgres(url: str) -> bool:
    return bool(url) and make_url(url).get_backend_name() == "postgresql"
