"""PostgreSQL's change listener (db/change_listener.py): what happens when its connection is
lost, and that it lets go of its connection with the engine."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from sqlalchemy.engine import Engine

from citewell.auth import AuthStore
from citewell.db import change_listener
from citewell.db.change_listener import APPLICATION_NAME, CHANNEL, ChangeListener
from citewell.db.changes import change_counter
from citewell.db.engine import url_engine


def eventually(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.02)


@pytest.fixture
def engine(postgres) -> Iterator[Engine]:  # noqa: ANN001
    engine = url_engine(postgres.create_database())
    AuthStore(engine)  # migrates
    yield engine
    engine.dispose()


def conninfo(engine: Engine) -> str:
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def listening_connections(info: str) -> list[int]:
    """Server process ids of the change listeners connected to the database."""
    with psycopg.connect(info, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s",
            (APPLICATION_NAME,),
        ).fetchall()
    return [row[0] for row in rows]


def counter_of(engine: Engine) -> ChangeListener:
    counter = change_counter(engine)
    assert isinstance(counter, ChangeListener)
    return counter


def test_a_lost_connection_turns_the_caches_off_until_it_is_back(engine, monkeypatch):
    monkeypatch.setattr(change_listener, "STALE_AFTER", 0.5)
    counter = counter_of(engine)
    eventually(lambda: counter.current() is not None)
    before = counter.current()
    assert before is not None
    (pid,) = listening_connections(conninfo(engine))
    with psycopg.connect(conninfo(engine), autocommit=True) as connection:
        connection.execute("SELECT pg_terminate_backend(%s)", (pid,))
    eventually(lambda: counter.current() is None)
    eventually(lambda: counter.current() is not None)
    assert (counter.current() or 0) > before  # notifications meanwhile may be lost


def test_a_notification_moves_the_number(engine):
    counter = counter_of(engine)
    eventually(lambda: counter.current() is not None)
    before = counter.current() or 0
    with psycopg.connect(conninfo(engine), autocommit=True) as connection:
        connection.execute(f"NOTIFY {CHANNEL}")
    eventually(lambda: (counter.current() or 0) > before)


def listening_engine(url: str) -> Engine:
    engine = url_engine(url)
    AuthStore(engine)
    counter = counter_of(engine)
    eventually(lambda: counter.current() is not None)
    return engine


def test_the_connection_goes_with_the_engine(postgres):  # noqa: ANN001
    engine = listening_engine(postgres.create_database())
    info = conninfo(engine)
    assert len(listening_connections(info)) == 1
    engine.dispose()
    del engine
    gc.collect()
    eventually(lambda: listening_connections(info) == [])


def test_pings_of_other_processes_move_nothing(engine, monkeypatch):
    monkeypatch.setattr(change_listener, "PING_SECONDS", 0.1)
    counter = counter_of(engine)
    other = change_listener.listener_for(url_engine(conninfo(engine)), ())
    eventually(lambda: counter.current() is not None and other.current() is not None)
    before = counter.current()
    time.sleep(1.0)  # ten pings each
    assert counter.current() == before
    other.stop()


def test_a_chunk_stores_version_row_moves_its_own_number_only(engine):
    """Ingestion bumps a chunk table's version row with every batch: that must not drop
    what the caches keep of keys, grants and KBs."""
    from citewell.stores.postgres.store import PostgresChunkStore
    from citewell.testing.conformance import CORPUS, DIM

    counter = counter_of(engine)
    eventually(lambda: counter.current() is not None)
    store = PostgresChunkStore(engine, "chunks_t", DIM)
    other = change_listener.listener_for(url_engine(conninfo(engine)), ())
    eventually(lambda: other.current() is not None)
    general, own = other.current(), other.table_number(store.stats)
    assert own is not None
    store.upsert(CORPUS)  # through the first engine: the second hears of it
    eventually(lambda: (other.table_number(store.stats) or 0) > own)
    assert other.current() == general
    other.stop()
