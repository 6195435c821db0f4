"""Bringing a database to the current schema: Alembic migrations, run on start-up.

A data dir from before migrations (no ``alembic_version`` table) is upgraded by the baseline
revision itself, which creates what is missing and applies the hand-written upgrades of
earlier releases; every later change is a revision of its own.
"""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from citewell.db.legacy import prepare_sqlite, relax_file_hashes
from citewell.errors import ConfigError

MIGRATIONS = Path(__file__).parent / "migrations"
# The newest revision. Checked against Alembic's own view by a test; lets a database that is
# already current skip loading Alembic and its scripts (0.2 s of every start-up).
HEAD = "0018"
_LOCK_KEY = 0x63697465  # "cite": one migration at a time across processes on PostgreSQL

_migrated: set[str] = set()
_guard = threading.Lock()


def ensure_schema(engine: Engine) -> None:
    """Migrate the database to the newest revision, once per database per process."""
    key = engine.url.render_as_string(hide_password=False)
    with _guard:
        if key in _migrated:
            return
        if engine.dialect.name == "sqlite":
            _migrate_sqlite(engine)
        elif not _is_current(engine):
            with engine.begin() as connection:
                # Processes starting together wait here; the first migrates, the rest
                # find the schema current.
                lock = text("SELECT pg_advisory_xact_lock(:key)")
                connection.execute(lock, {"key": _LOCK_KEY})
                upgrade(connection)
        _migrated.add(key)


def _migrate_sqlite(engine: Engine) -> None:
    """SQLite runs DDL outside a transaction, so two processes opening a new data dir at
    once (a server and a CLI command) would both create the tables, and one would fail on
    "table already exists": a lock file beside the database lets one migrate at a time."""
    if _is_current(engine):
        relax_file_hashes(engine)  # also when current: a start that stopped between steps
        return
    with _file_lock(engine.url.database):
        if not _is_current(engine):
            prepare_sqlite(engine)
            with engine.begin() as connection:
                upgrade(connection)
        relax_file_hashes(engine)


@contextmanager
def _file_lock(database: str | None) -> Iterator[None]:
    if not database or database == ":memory:":  # one connection's own database
        yield
        return
    with Path(database).with_suffix(".migrate.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def ensure_vector_extension(engine: Engine) -> None:
    """pgvector in a PostgreSQL database, for the chunk store's tables: created when missing
    and the role may (its owner, or a superuser; the extension must be installed on the
    server), else a ConfigError that names the statement an administrator runs."""
    with engine.begin() as connection:
        if _has_vector(connection):
            return
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        try:
            with connection.begin_nested():
                connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        except DBAPIError as error:
            raise ConfigError(_no_vector_message(engine, error)) from None


def _has_vector(connection: Connection) -> bool:
    found = text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    return connection.execute(found).first() is not None


def _no_vector_message(engine: Engine, error: DBAPIError) -> str:
    reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
    database = engine.url.database or "the database"
    return (
        f"The chunk store needs the pgvector extension in {database}, and Citewell could "
        f"not create it ({reason}). Install pgvector on the PostgreSQL server (e.g. the "
        f"postgresql-NN-pgvector package, or the pgvector/pgvector image), then as a "
        f'superuser run: psql -d {database} -c "CREATE EXTENSION vector;" and start again.'
    )


def _is_current(engine: Engine) -> bool:
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return False
        found = connection.execute(text("SELECT version_num FROM alembic_version")).scalars()
        return list(found) == [HEAD]


def upgrade(connection: Connection, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(_config(connection), revision)


def current_revision(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config(None)).get_current_head()
    assert head is not None
    return head


def _config(connection: Connection | None):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config
