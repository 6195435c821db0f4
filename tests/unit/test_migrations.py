"""The database schema comes from Alembic migrations: a new database gets it, a data dir
made before migrations is upgraded in place, and the models never drift from the revisions."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.auth.grants import GrantStore
from citewell.config import Settings
from citewell.db import ensure_schema, sqlite_engine
from citewell.db.changes import OPERATIONS, TRACKED
from citewell.db.models import Base
from citewell.db.schema import current_revision, head_revision
from citewell.types import SearchMode

# Made by the release before migrations (commit 387baf4) with its CLI: users alice and bob,
# KB "handbook" with one ingested text file, a key for alice, group "staff" (bob) with read
# access to the KB, alice with write access. Embedding cache left out.
BEFORE_MIGRATIONS = Path(__file__).parents[1] / "data" / "data-dir-before-migrations.tgz"


def drift(engine) -> list:  # type: ignore[no-untyped-def]
    with engine.connect() as connection:
        return list(compare_metadata(MigrationContext.configure(connection), Base.metadata))


def test_the_head_constant_is_alembics_head():
    from citewell.db.schema import HEAD

    assert head_revision() == HEAD


def test_a_new_database_gets_the_newest_revision_and_matches_the_models(tmp_path):
    engine = sqlite_engine(tmp_path / "citewell.sqlite")
    ensure_schema(engine)
    with engine.connect() as connection:
        assert current_revision(connection) == head_revision()
        triggers = connection.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'change_counter%'"
        )
        # A migration that makes a table anew (SQLite's way to change a column) makes them too.
        assert len(triggers.all()) == len(TRACKED) * len(OPERATIONS)
    assert drift(engine) == []


def test_the_newest_revision_goes_down_and_up_again(tmp_path):
    """Down to 0011 and back: the schema, the change counter's triggers and a stored file
    survive. 0011 itself refuses to go down on SQLite, saying what to do instead."""
    from alembic import command

    from citewell.db.schema import _config

    app = Citewell.from_settings(Settings(data_dir=tmp_path))
    kb = app.create_kb("notes")
    app.ingest_texts([("a.md", "Ducks eat snails.")], kb.id)
    engine = app.catalog.engine
    with engine.begin() as connection:
        command.downgrade(_config(connection), "0011")
    with engine.begin() as connection:
        assert current_revision(connection) == "0011"
        with pytest.raises(RuntimeError, match="restore a copy"):
            command.downgrade(_config(connection), "0010")
    with engine.begin() as connection:
        command.upgrade(_config(connection), "head")
    with engine.connect() as connection:
        assert current_revision(connection) == head_revision()
        triggers = connection.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'change_counter%'"
        )
        assert len(triggers.all()) == len(TRACKED) * len(OPERATIONS)
        assert connection.exec_driver_sql("SELECT count(*) FROM files").scalar() == 1
    assert drift(engine) == []


@pytest.fixture
def old_data_dir(tmp_path) -> Path:
    with tarfile.open(BEFORE_MIGRATIONS) as archive:
        archive.extractall(tmp_path / "data", filter="data")
    return tmp_path / "data"


def test_a_data_dir_from_before_migrations_upgrades_in_place(old_data_dir):
    app = Citewell.from_settings(Settings(data_dir=old_data_dir))
    engine = app.catalog.engine
    with engine.connect() as connection:
        assert current_revision(connection) == head_revision()
    assert drift(engine) == []
    users = {u.name: u for u in AuthStore(engine).list_users()}
    assert set(users) == {"alice", "bob"}
    kb = app.catalog.resolve_kb("handbook")
    assert kb.file_count == 1
    grants = {(g.principal, g.permission) for g in GrantStore(engine).grants(kb.id)}
    assert grants == {("user:alice", "write"), ("group:staff", "read")}
    key_owner = AuthStore(engine).list_keys()[0].user_id
    assert key_owner == users["alice"].id
    hits = app.search("How many holiday days?", [kb.id], SearchMode.HYBRID, 3)
    assert "25 days" in hits[0].chunk.text
    assert app.check(recall_samples=0).problems == 0
    files = sa.inspect(engine)
    assert not any(u["column_names"] == ["sha256"] for u in files.get_unique_constraints("files"))
    assert "uq_files_tenant_sha256" in {i["name"] for i in files.get_indexes("files")}
    (record,) = app.catalog.list_files()
    assert record.tenant == ""  # made with the CLI: the operator's
    (entry,) = app.catalog.folders.entries(kb.id)  # 0014 gave the old path an id of its own
    assert len(entry.entry_id) == 32 and int(entry.entry_id, 16) >= 0
    Citewell.from_settings(Settings(data_dir=old_data_dir))  # opening again changes nothing


# Each process waits for the same moment, then creates the schema.
OPEN_CATALOG = """
import sys, time
from pathlib import Path
from citewell.db import ensure_schema, sqlite_engine
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
ensure_schema(sqlite_engine(Path(sys.argv[1])))
"""


def test_processes_opening_one_new_database_at_once_all_start(tmp_path):
    """A server and a CLI command on a new data dir: SQLite runs DDL outside transactions, so
    without the migration lock all four failed on "table already exists" in 30 of 30 tries."""
    database = tmp_path / "citewell.sqlite"
    start = str(time.time() + 3.0)  # after the four interpreters have started
    command = [sys.executable, "-c", OPEN_CATALOG, str(database), start]
    processes = [subprocess.Popen(command, stderr=subprocess.PIPE) for _ in range(4)]
    errors = [process.communicate(timeout=120)[1].decode()[-300:] for process in processes]
    assert [p.returncode for p in processes] == [0, 0, 0, 0], errors
    engine = sqlite_engine(database)
    with engine.connect() as connection:
        assert current_revision(connection) == head_revision()
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


def test_entry_ids_made_later_sort_later_and_look_like_the_others(monkeypatch):
    """Links' entry ids lead with the time, so their index grows at its end (an import's
    inserts past a million files); they stay 32 hex digits, with 80 random bits."""
    from citewell.db import models

    assert len({models.new_ordered_id() for _ in range(1000)}) == 1000
    clock = iter([1_700_000_000_000_000_000, 1_700_000_000_001_000_000])
    monkeypatch.setattr(models.time, "time_ns", lambda: next(clock))
    first, second = models.new_ordered_id(), models.new_ordered_id()
    assert first < second
    assert len(first) == len(models.new_id()) == 32
    assert int(first, 16) and first[:12] == f"{1_700_000_000_000:012x}"


def test_files_text_hashes_are_not_indexed(tmp_path):
    """Nothing looks a file up by its text's hash: the index only cost each insert (0018)."""
    engine = sqlite_engine(tmp_path / "c.sqlite")
    ensure_schema(engine)
    names = {i["name"] for i in sa.inspect(engine).get_indexes("files")}
    assert "ix_files_text_sha256" not in names and "uq_files_tenant_sha256" in names
