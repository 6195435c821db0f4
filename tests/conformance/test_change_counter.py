"""What requests read on every call (keys, grants, KBs, links, files) is kept per process
until the database changes. SQLite: triggers raise a counter with every write, by any
process or tool, so a revoked key or grant still stops at the next request. PostgreSQL:
triggers notify every listening process, which sees another's change within milliseconds
and its own at the next request."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from citewell.auth import AuthStore
from citewell.auth.grants import GrantStore
from citewell.catalog.catalog import Catalog, FileRecord
from citewell.db.changes import OPERATIONS, TRACKED, ChangeCache, change_counter


@pytest.fixture
def engine(database: Engine) -> Engine:
    return database


def url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def listening(engine: Engine) -> None:
    """Waits until the engine's counter is trusted (PostgreSQL's listener has connected)."""
    counter = change_counter(engine)
    assert counter is not None
    eventually(lambda: counter.current() is not None)


def eventually(check: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.01)


def at_next_request(engine: Engine, check: Callable[[], bool]) -> None:
    """SQLite's counter commits with the change: the next call sees it. PostgreSQL's
    notification arrives after the commit: within a few milliseconds."""
    if engine.dialect.name == "sqlite":
        assert check()
    else:
        eventually(check)


def statements(engine) -> list[str]:  # noqa: ANN001
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    return seen


def other_process(engine: Engine, code: str) -> None:
    """Runs ``code`` in a new interpreter with ``auth``, ``grants`` and ``catalog`` open on
    the same database, as another server process or the CLI would."""
    setup = (
        "from citewell.auth import AuthStore\n"
        "from citewell.auth.grants import GrantStore\n"
        "from citewell.catalog.catalog import Catalog\n"
        "from citewell.db.engine import url_engine\n"
        f"engine = url_engine({url(engine)!r})\n"
        "auth, grants, catalog = AuthStore(engine), GrantStore(engine), Catalog(engine)\n"
    )
    subprocess.run([sys.executable, "-c", setup + code], check=True)


def test_every_tracked_table_has_a_trigger_for_every_kind_of_write(engine):
    AuthStore(engine)  # migrates
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            found = set(
                connection.exec_driver_sql(
                    "SELECT c.relname, pg_get_triggerdef(t.oid) FROM pg_trigger t "
                    "JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal"
                )
            )
        for table in TRACKED:
            definition = " ".join(d for name, d in found if name == table)
            assert "AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE" in definition
            assert "FOR EACH STATEMENT" in definition
        return
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
    listening(engine)
    one_request()
    seen = statements(engine)
    one_request()
    assert seen == []
    catalog.link(kb.id, "f1", "copy.txt", name="copy.txt")  # any write starts afresh
    seen.clear()
    one_request()
    assert seen


def shared_with_bob(engine: Engine) -> tuple[AuthStore, GrantStore, Any, Any, str]:
    """Stores, a KB of ada's that bob may read, bob's key and its secret; once listening."""
    auth, grants, catalog = AuthStore(engine), GrantStore(engine), Catalog(engine)
    owner, reader = auth.create_user("ada"), auth.create_user("bob")
    key, plain = auth.create_key(reader.id)
    kb = catalog.create_kb("handbook", owner_id=owner.id)
    grants.grant(kb.id, "user:bob", "read")
    listening(engine)
    return auth, grants, kb, key, plain


def test_another_processs_revocations_hold_at_the_next_request(engine):
    auth, grants, kb, _, plain = shared_with_bob(engine)
    found = auth.identify(plain)
    assert found is not None and grants.access(*found).can_read(kb)

    other_process(engine, f"grants.revoke({kb.id!r}, 'user:bob')")

    def revoked() -> bool:
        found = auth.identify(plain)
        return found is not None and not grants.access(*found).can_read(kb)

    at_next_request(engine, revoked)
    other_process(engine, "auth.update_user('bob', disabled=True)")
    at_next_request(engine, lambda: auth.identify(plain) is None)


def test_this_processs_own_writes_hold_at_its_next_request(engine):
    auth, grants, kb, key, plain = shared_with_bob(engine)
    for _ in range(2):  # the second from the caches
        found = auth.identify(plain)
        assert found is not None and grants.access(*found).can_read(kb)
    grants.revoke(kb.id, "user:bob")
    found = auth.identify(plain)
    assert found is not None and not grants.access(*found).can_read(kb)
    auth.revoke_key(key.id)
    assert auth.identify(plain) is None


def test_a_write_by_hand_also_counts(engine):
    auth = AuthStore(engine)
    user = auth.create_user("ada")
    key, plain = auth.create_key(user.id)
    listening(engine)
    assert auth.identify(plain) is not None
    if engine.dialect.name == "sqlite":
        with sqlite3.connect(engine.url.database or "") as connection:  # not through Citewell
            connection.execute("UPDATE api_keys SET revoked_at = 1 WHERE id = ?", (key.id,))
    else:
        import psycopg

        with psycopg.connect(url(engine).replace("+psycopg", ""), autocommit=True) as connection:
            connection.execute("UPDATE api_keys SET revoked_at = 1 WHERE id = %s", (key.id,))
    at_next_request(engine, lambda: auth.identify(plain) is None)


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
    listening(engine)
    cache: ChangeCache[str, int] = ChangeCache(change_counter(engine))
    asked: list[set[str]] = []

    def load(keys):  # noqa: ANN001, ANN202
        asked.append(set(keys))
        return {k: 1 for k in keys if k == "x"}

    assert cache.get_many(["x", "y"], load) == {"x": 1}
    assert cache.get_many(["x", "y", "z"], load) == {"x": 1}
    assert asked == [{"x", "y"}, {"z"}]
