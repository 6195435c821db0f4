"""In-memory copies of small KBs of a big PostgreSQL table (stores/postgres/kb_copies.py),
kept current through the change log.

"Big" here is a memory_rows of 5 against the five-chunk corpus (six rows with ``EXTRA``),
so every KB of it is small enough for a copy; the whole table has no copy (table_copy_mb
0), so a search without a KB copy runs in SQL."""

import time
from functools import partial

import psycopg
import pytest

from citewell.db.changes import change_counter
from citewell.db.engine import url_engine
from citewell.stores.memory import kb_copies
from citewell.stores.postgres.store import PostgresChunkStore
from citewell.testing import conformance
from citewell.testing.conformance import CORPUS, DIM, ScanConformance, make_chunk, unit
from citewell.types import ChunkFilter
from tests.conformance.test_chunk_store_postgres import (
    _scans_on,
    _wait_for_replay,
    _wait_for_scan,
    eventually,
)

pytestmark = pytest.mark.conformance

KB1 = ChunkFilter(kb_ids=("kb1",))
MEMORY_ROWS = 5
EXTRA = make_chunk("x1", "f7", ("kb3",), "Parking is free for staff.", 7)


@pytest.fixture(autouse=True)
def every_call_counts(monkeypatch):
    """The tests ask for copies in quick succession: each ask counts as a search."""
    monkeypatch.setattr(kb_copies, "SAME_SEARCH", 0.0)


@pytest.fixture
def engine(postgres):
    engine = url_engine(postgres.create_database())
    yield engine
    engine.dispose()


class CopyWaitingStore(PostgresChunkStore):
    """Waits for the KB copy before each search of a KB small enough for one, so every
    such search of the shared suite runs on a copy."""

    def _kb_copy(self, where):
        deadline = time.monotonic() + 10
        while (found := super()._kb_copy(where)) is None and time.monotonic() < deadline:
            rows = self.count(ChunkFilter(kb_ids=where.kb_ids)) if where.kb_ids else 0
            if not 0 < rows < MEMORY_ROWS or self.count(ChunkFilter()) < MEMORY_ROWS:
                return None
            time.sleep(0.02)
        return found


def big(engine, table: str = "t", store_type=PostgresChunkStore) -> PostgresChunkStore:
    return store_type(engine, table, DIM, memory_rows=MEMORY_ROWS, kb_copy_mb=64)


class TestPostgresChunkStoreWithKbCopies(ScanConformance):
    @pytest.fixture
    def store(self, engine):
        return big(engine, "chunks_test", CopyWaitingStore)


@pytest.fixture
def store(engine):
    store = big(engine)
    store.upsert([*CORPUS, EXTRA])
    return store


def wait_for_copy(store: PostgresChunkStore, kb_ids: tuple[str, ...] = ("kb1",)):
    find = partial(store._kb_copy, ChunkFilter(kb_ids=kb_ids))
    return conformance.found_within(find, f"in-memory copy of {kb_ids}")


def ids(hits):
    return [h.chunk_id for h in hits]


def test_a_copy_answers_searches_as_sql_does(store, engine):
    in_sql = PostgresChunkStore(engine, "t", DIM)  # no copies: every search in SQL
    sql_keyword = store.keyword_search("leave weeks", 3, KB1)
    copy = wait_for_copy(store)
    assert sorted(copy.chunk_ids()) == ["c1", "c2", "c4"]
    hits = store.vector_search(unit(1), 3, KB1)
    assert ids(hits) == ids(in_sql.vector_search(unit(1), 3, KB1))
    assert hits[0].score == pytest.approx(1.0)
    from_copy = store.keyword_search("leave weeks", 3, KB1)
    assert ids(from_copy) == ids(sql_keyword)  # BM25 with the KB's own statistics
    assert [h.score for h in from_copy] == pytest.approx([h.score for h in sql_keyword], 1e-4)
    assert store.kb_copies().searches_from_copies >= 2


def test_writes_to_other_kbs_keep_the_copy(store):
    copy = wait_for_copy(store)
    store.upsert([make_chunk("n1", "f9", ("kb2",), "New text elsewhere.", 1)])
    assert wait_for_copy(store) is copy  # checked against the change log, not read again
    assert ids(store.vector_search(unit(1), 5, KB1))[0] == "c2"
    assert store.kb_copies().made == 1


def test_own_writes_deletes_and_links_are_seen_at_once(store):
    wait_for_copy(store)
    store.upsert([make_chunk("n1", "f9", ("kb1",), "Brand new policy.", 5)])
    assert ids(store.vector_search(unit(5), 1, KB1)) == ["n1"]
    assert "n1" in set(wait_for_copy(store).chunk_ids())
    store.delete(ChunkFilter(file_ids=("f1",)))
    assert set(ids(store.vector_search(unit(1), 5, KB1))) == {"c4", "n1"}
    assert set(wait_for_copy(store).chunk_ids()) == {"c4", "n1"}
    store.unlink("f3", "kb1")
    assert ids(store.vector_search(unit(3), 5, KB1)) == ["n1"]
    store.link_files(["f2"], "kb1")  # a file of another KB, linked to this one
    assert ids(store.vector_search(unit(2), 1, KB1)) == ["c3"]
    assert set(wait_for_copy(store).chunk_ids()) == {"n1", "c3"}


def test_another_process_writes_are_seen_once_notified(store, engine):
    copy = wait_for_copy(store)
    assert change_counter(engine) is not None
    other = url_engine(engine.url.render_as_string(hide_password=False))
    writer = PostgresChunkStore(other, "t", DIM)  # another API machine
    writer.upsert([make_chunk("n2", "f8", ("kb3",), "Elsewhere entirely.", 2)])
    deadline = time.monotonic() + 10
    while store._kb_copies._current < 0 or store._kb_copies._current == copy.version:
        assert time.monotonic() < deadline, "the other process's write was not checked"
        store.vector_search(unit(1), 1, KB1)
        time.sleep(0.02)
    assert wait_for_copy(store) is copy  # a write to another KB: kept
    writer.delete(ChunkFilter(file_ids=("f1",)))
    deadline = time.monotonic() + 10
    while set(ids(store.vector_search(unit(1), 5, KB1))) != {"c4"}:
        assert time.monotonic() < deadline, "the other process's delete was not seen"
        time.sleep(0.02)
    assert set(wait_for_copy(store).chunk_ids()) == {"c4"}
    other.dispose()


def test_a_kb_too_big_for_a_copy_is_searched_in_sql(engine):
    store = big(engine)
    more = [make_chunk(f"c{i}", f"f{i}", ("kb1",), "More on leave.", 4) for i in (6, 7)]
    store.upsert([*CORPUS, *more])
    for _ in range(3):  # kb1 holds 5 rows now: as many as memory_rows
        assert ids(store.vector_search(unit(1), 1, KB1)) == ["c2"]
    time.sleep(0.3)
    assert store._kb_copies._copies == {}
    assert frozenset({"kb1"}) in store._kb_copies._refused  # not asked again for a minute


def test_no_copies_of_a_small_table_or_when_turned_off(engine):
    small = big(engine, "small")
    small.upsert(CORPUS[:4])
    assert small._kb_copy(KB1) is None and small.kb_copies().searches_from_table == 0
    off = PostgresChunkStore(engine, "off", DIM, memory_rows=MEMORY_ROWS)
    off.upsert([*CORPUS, EXTRA])
    assert off._kb_copy(KB1) is None
    assert ids(off.vector_search(unit(1), 1, KB1)) == ["c2"]


def test_searches_of_a_kb_refused_a_copy_are_not_counted_as_misses(engine):
    store = big(engine)
    store.upsert([*CORPUS, EXTRA])
    everything = ChunkFilter(kb_ids=("kb1", "kb2", "kb3"))  # every row: no copy
    for _ in range(3):
        store.vector_search(unit(1), 1, everything)
    eventually(lambda: frozenset(everything.kb_ids) in store._kb_copies._refused)
    missed = store.kb_copies().searches_from_table
    for _ in range(5):
        assert ids(store.vector_search(unit(1), 1, everything)) == ["c2"]
    assert store.kb_copies().searches_from_table == missed


def test_copies_are_read_from_a_caught_up_replica_else_from_the_primary(postgres):
    url = postgres.create_database()
    standby = postgres.replica()
    try:
        standby_url = standby.wait_for_database(url.rsplit("/", 1)[1])
        primary, replica = url_engine(url), url_engine(standby_url)
        store = PostgresChunkStore(
            primary, "r", DIM, memory_rows=MEMORY_ROWS, replica=replica, kb_copy_mb=64
        )
        store.upsert([*CORPUS, EXTRA])
        _wait_for_replay(url, standby_url)
        before = _scans_on(standby_url, "r")
        assert sorted(wait_for_copy(store).chunk_ids()) == ["c1", "c2", "c4"]
        _wait_for_scan(standby_url, "r", before)  # the copy was read there
        # Replay paused: the replica lags this write, so the copy is read from the primary.
        with psycopg.connect(standby_url, autocommit=True) as connection:
            connection.execute("SELECT pg_wal_replay_pause()")
        store.upsert([make_chunk("n1", "f9", ("kb1",), "Brand new policy.", 5)])
        assert ids(store.vector_search(unit(5), 1, KB1)) == ["n1"]  # the whole table's way
        assert "n1" in wait_for_copy(store).chunk_ids()
        with psycopg.connect(standby_url, autocommit=True) as connection:
            connection.execute("SELECT pg_wal_replay_resume()")
        replica.dispose()
        primary.dispose()
    finally:
        standby.stop()
