"""What requests read on every call (keys, grants, KBs, links, files) is kept per process
until the database changes: SQLite triggers raise a counter with every write, by any
process or tool, so a revoked key or grant still stops at the next request."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import event

from citewell.auth import AuthStore
from citewell.auth.grants import GrantStore
from citewell.catalog.catalog import Catalog, FileRecord
from citewell.db import sqlite_engine
from citewell.db.changes import OPERATIONS, TRACKED, ChangeCache, change_counter


@pytest.fixture
def path(tmp_path) -> Path:
    return tmp_path / "citewell.sqlite"


@pytest.fixture
def engine(path):  # noqa: ANN201
    return sqlite_engine(path)


def statements(engine) -> list[str]:  # noqa: ANN001
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    return seen


def other_process(path: Path, code: str) -> None:
    """Runs ``code`` in a new interpreter with ``auth``, ``grants`` and ``catalog`` open on
    the same database, as another server process or the CLI would."""
    setup = (
        "from citewell.auth import AuthStore\n"
        "from citewell.auth.grants import GrantStore\n"
        "from citewell.catalog.catalog import Catalog\n"
        "from citewell.db import sqlite_engine\n"
        f"engine = sqlite_engine(__import__('pathlib').Path({str(path)!r}))\n"
        "auth, grants, catalog = AuthStore(engine), GrantStore(engine), Catalog(engine)\n"
    )
    subprocess.run([sys.executable, "-c", setup + code], check=True)


def test_every_tracked_table_has_a_trigger_for_every_kind_of_write(engine):
    AuthStore(engine)  # migrates
    with engine.connect() as connection:
        found = {
            row[0]
            for row in connection.exec_driver_sql(
                "SELECT tbl_name || ' ' || sql FROM sqlite_master WHERE type = 'trigger'"
            )
        }
    for table in TRACKED:
        for operation in OPERATIONS:
            assert any(t.startswith(f"{table} ") and f"AFTER {operation} ON" in t for t in found)


def test_repeated_reads_cost_no_statement_until_something_changes(engine):
    auth, grants, catalog = AuthStore(engine), GrantStore(engine), Catalog(engine)
    user = auth.create_user("ada")
    key, plain = auth.create_key(user.id)
    kb = catalog.create_kb("handbook", owner_id=user.id)
    catalog.add_file(FileRecord("f1", "s", "t", "a.txt", "text/plain", 1, 1, "done", 0.0))
    catalog.link(kb.id, "f1", "a.txt")

    def one_request() -> None:
        found = auth.identify(plain)
        assert found is not None
        access = grants.access(*found)
        assert catalog.resolve_kb("handbook", access.can_read, user.id, count_files=False)
        assert {link.kb_id for link in catalog.links(file_ids={"f1"}, kb_ids={kb.id})} == {kb.id}
        assert [f.id for f in catalog.files_by_id({"f1"})] == ["f1"]

    one_request()  # the key's first use is written down (last_used_at): a change
    one_request()
    seen = statements(engine)
    one_request()
    assert seen == []
    catalog.link(kb.id, "f1", "copy.txt", name="copy.txt")  # any write starts afresh
    seen.clear()
    one_request()
    assert seen


def test_another_processs_revocations_hold_at_the_next_request(engine, path):
    auth, grants, catalog = AuthStore(engine), GrantStore(engine), Catalog(engine)
    owner, reader = auth.create_user("ada"), auth.create_user("bob")
    _, plain = auth.create_key(reader.id)
    kb = catalog.create_kb("handbook", owner_id=owner.id)
    grants.grant(kb.id, "user:bob", "read")
    found = auth.identify(plain)
    assert found is not None and grants.access(*found).can_read(kb)

    other_process(path, f"grants.revoke({kb.id!r}, 'user:bob')")
    found = auth.identify(plain)
    assert found is not None and not grants.access(*found).can_read(kb)

    other_process(path, "auth.update_user('bob', disabled=True)")
    assert auth.identify(plain) is None


def test_a_write_by_hand_in_sqlite_also_counts(engine, path):
    auth = AuthStore(engine)
    user = auth.create_user("ada")
    key, plain = auth.create_key(user.id)
    assert auth.identify(plain) is not None
    with sqlite3.connect(path) as connection:  # not through Citewell at all
        connection.execute("UPDATE api_keys SET revoked_at = 1 WHERE id = ?", (key.id,))
    assert auth.identify(plain) is None


def test_without_a_counter_every_call_reads_afresh():
    cache: ChangeCache[str, int] = ChangeCache(None)
    calls: list[str] = []
    assert cache.get("a", lambda: calls.append("a") or 1) == 1
    assert cache.get("a", lambda: calls.append("a") or 1) == 1
    assert calls == ["a", "a"]
    many = cache.get_many(["x", "y"], lambda keys: {k: 2 for k in keys if k == "x"})
    assert many == {"x": 2}


def test_keys_without_a_value_are_remembered_as_such(engine):
    AuthStore(engine)
    cache: ChangeCache[str, int] = ChangeCache(change_counter(engine))
    asked: list[set[str]] = []

    def load(keys):  # noqa: ANN001, ANN202
        asked.append(set(keys))
        return {k: 1 for k in keys if k == "x"}

    assert cache.get_many(["x", "y"], load) == {"x": 1}
    assert cache.get_many(["x", "y", "z"], load) == {"x": 1}
    assert asked == [{"x", "y"}, {"z"}]
