"""In-memory copies of small KBs of a big LanceDB table (stores/lance_kb_snapshots).

"Big" here is a vector_index_min_rows of 4 against the five-chunk corpus, so every KB of
it is small enough for a copy."""

import time
from functools import partial

import pytest

from citewell.stores.base import optimize_store
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.store import LanceChunkStore
from citewell.stores.memory import kb_copies
from citewell.testing import conformance
from citewell.testing.conformance import CORPUS, DIM, ScanConformance, make_chunk, unit
from citewell.types import ChunkFilter

pytestmark = pytest.mark.conformance

POLICY = VectorIndexPolicy(min_rows=4)


@pytest.fixture(autouse=True)
def every_call_counts(monkeypatch):
    """The tests ask for copies in quick succession: each ask counts as a search."""

    monkeypatch.setattr(kb_copies, "SAME_SEARCH", 0.0)


class CopyWaitingStore(LanceChunkStore):
    """Waits for the KB copy before each search, so every filtered search in the shared
    suite runs on a copy (in a server a search reads LanceDB while the copy is made)."""

    def _kb_snapshot(self, where):
        deadline = time.monotonic() + 10
        while (found := super()._kb_snapshot(where)) is None and time.monotonic() < deadline:
            if not where.kb_ids or self._counts(None) < self.vector_index.min_rows:
                return None
            time.sleep(0.02)
        return found


class TestLanceChunkStoreWithKbCopies(ScanConformance):
    @pytest.fixture
    def store(self, tmp_path):
        return CopyWaitingStore(tmp_path / "lance", "chunks_test", DIM, POLICY)


def wait_for_copy(store: LanceChunkStore, kb_ids: tuple[str, ...]):
    find = partial(store._kb_snapshot, ChunkFilter(kb_ids=kb_ids))
    return conformance.found_within(find, f"in-memory copy of {kb_ids}")


@pytest.fixture
def store(tmp_path):
    store = LanceChunkStore(tmp_path / "lance", "t", DIM, POLICY)
    store.upsert(CORPUS)
    optimize_store(store)
    return store


def ids(hits):
    return [h.chunk_id for h in hits]


def test_a_copy_answers_vector_searches_and_row_reads(store):
    copy = wait_for_copy(store, ("kb1",))
    assert sorted(copy.chunk_ids()) == ["c1", "c2", "c4"]
    hits = store.vector_search(unit(1), 3, ChunkFilter(kb_ids=("kb1",)))
    assert ids(hits)[0] == "c2" and set(ids(hits)) == {"c1", "c2", "c4"}
    assert hits[0].score == pytest.approx(1.0)
    store._addresses.take = None  # rows must come from the copy, not LanceDB
    assert [c.text for c in store.get(["c4", "c2"])] == [CORPUS[3].text, CORPUS[1].text]


def test_writes_to_other_kbs_keep_the_copy(store):
    copy = wait_for_copy(store, ("kb1",))
    store.upsert([make_chunk("n1", "f9", ("kb2",), "New text elsewhere.", 1)])
    optimize_store(store)
    assert wait_for_copy(store, ("kb1",)) is copy  # checked, not read again
    assert ids(store.vector_search(unit(1), 5, ChunkFilter(kb_ids=("kb1",))))[0] == "c2"


def test_a_write_to_its_kb_is_seen_at_once(store):
    wait_for_copy(store, ("kb1",))
    store.upsert([make_chunk("n1", "f9", ("kb1",), "Brand new policy.", 5)])
    assert ids(store.vector_search(unit(5), 1, ChunkFilter(kb_ids=("kb1",)))) == ["n1"]
    copy = wait_for_copy(store, ("kb1",))
    assert "n1" in set(copy.chunk_ids())
    assert ids(store.vector_search(unit(5), 1, ChunkFilter(kb_ids=("kb1",)))) == ["n1"]


def test_deletes_and_unlinks_are_seen_at_once(store):
    kb1 = ChunkFilter(kb_ids=("kb1",))
    wait_for_copy(store, ("kb1",))
    store.delete(ChunkFilter(file_ids=("f1",)))
    assert set(ids(store.vector_search(unit(1), 5, kb1))) == {"c4"}
    assert store.get(["c1", "c2"]) == []
    assert set(wait_for_copy(store, ("kb1",)).chunk_ids()) == {"c4"}
    store.unlink("f3", "kb1")
    assert store.vector_search(unit(3), 5, kb1) == []
    store.link_files(["f3"], "kb1")
    assert ids(store.vector_search(unit(3), 5, kb1)) == ["c4"]


def test_another_process_writes_are_seen_within_seconds(store, tmp_path):
    kb1 = ChunkFilter(kb_ids=("kb1",))
    wait_for_copy(store, ("kb1",))
    other = LanceChunkStore(tmp_path / "lance", "t", DIM, POLICY)  # as a CLI ingest would
    other.delete(ChunkFilter(file_ids=("f1",)))
    deadline = time.monotonic() + 10
    while set(ids(store.vector_search(unit(1), 5, kb1))) != {"c4"}:
        assert time.monotonic() < deadline, "the other process's delete was not seen"
        time.sleep(0.05)


def test_filters_on_files_apply_inside_a_copy(store):
    wait_for_copy(store, ("kb1",))
    where = ChunkFilter(kb_ids=("kb1",), file_ids=("f3",))
    assert ids(store.vector_search(unit(1), 5, where)) == ["c4"]


def test_copies_stay_within_their_memory_budget(store):
    wait_for_copy(store, ("kb1",))
    wait_for_copy(store, ("kb2",))
    copies = dict(store._kb_snapshots._copies)
    assert set(copies) == {frozenset({"kb1"}), frozenset({"kb2"})}
    kept = store._kb_snapshots
    kept._budget = max(c.nbytes for c in copies.values())
    kept._searches = {frozenset({"kb1"}): 5.0, frozenset({"kb2"}): 1.0}
    assert set(kept._within_budget(copies)) == {frozenset({"kb1"})}  # the most searched


def test_a_full_budget_admits_only_much_hotter_kbs(store):
    wait_for_copy(store, ("kb1",))
    kept = store._kb_snapshots
    kept._budget = kept._copies[frozenset({"kb1"})].nbytes  # full
    kept._searches = {frozenset({"kb1"}): 3.0, frozenset({"kb3"}): 1.0}
    assert not kept._admits(frozenset({"kb3"}))
    kept._searches[frozenset({"kb3"})] = 8.0
    assert kept._admits(frozenset({"kb3"}))


def test_halving_the_counts_keeps_those_of_copies(store):
    wait_for_copy(store, ("kb1",))
    kept = store._kb_snapshots
    kept._budget = kept._copies[frozenset({"kb1"})].nbytes  # full
    kept._searches = {frozenset({"kb1"}): 0.5}
    kept._halved -= 3600  # a count is due to halve at the next search
    kept._count(frozenset({"kb3"}), time.monotonic())
    kept._count(frozenset({"kb3"}), time.monotonic())
    assert kept._searches[frozenset({"kb1"})] == 0.25
    assert not kept._admits(frozenset({"kb3"}))  # 2 searches against a coldest of 0.25


def test_the_two_halves_of_one_search_count_once(store, monkeypatch):

    monkeypatch.setattr(kb_copies, "SAME_SEARCH", 0.1)
    store.vector_search(unit(2), 1, ChunkFilter(kb_ids=("kb2",)))
    store.keyword_search("lunch", 1, ChunkFilter(kb_ids=("kb2",)))
    assert store._kb_snapshots._searches == {frozenset({"kb2"}): 1.0}


def test_searches_in_quick_succession_each_count(store, monkeypatch):
    monkeypatch.setattr(kb_copies, "SAME_SEARCH", 0.1)
    kept, key = store._kb_snapshots, frozenset({"kb2"})
    for n in range(8):  # an ask every 50 ms for 0.4 s: four searches, at least
        kept._count(key, 1000.0 + 0.05 * n)
    assert kept._searches[key] == 4.0


def test_a_kb_searched_once_gets_no_copy(store):
    kept = store._kb_snapshots
    assert store._kb_snapshot(ChunkFilter(kb_ids=("kb2",))) is None
    time.sleep(0.3)
    assert kept._copies == {}
    assert ids(store.vector_search(unit(2), 1, ChunkFilter(kb_ids=("kb2",)))) == ["c3"]


def test_the_builder_thread_ends_when_idle_and_starts_again(store, monkeypatch):

    monkeypatch.setattr(kb_copies, "IDLE_SECONDS", 0.05)
    wait_for_copy(store, ("kb1",))
    deadline = time.monotonic() + 10
    while store._kb_snapshots._worker is not None:
        assert time.monotonic() < deadline, "the builder thread did not end"
        time.sleep(0.05)
    store.upsert([make_chunk("n1", "f9", ("kb1",), "Brand new policy.", 5)])
    assert "n1" in set(wait_for_copy(store, ("kb1",)).chunk_ids())


def test_no_copies_when_turned_off(tmp_path):
    store = LanceChunkStore(tmp_path / "lance", "t", DIM, POLICY, kb_snapshot_mb=0)
    store.upsert(CORPUS)
    assert store._kb_snapshot(ChunkFilter(kb_ids=("kb1",))) is None
    assert ids(store.vector_search(unit(1), 1, ChunkFilter(kb_ids=("kb1",)))) == ["c2"]


def test_stats_count_copies_and_where_searches_ran(store):
    before = store.kb_copies()
    assert (before.copies, before.made, before.searches_from_copies) == (0, 0, 0)
    assert before.budget_mb == 512.0
    store.vector_search(unit(1), 1, ChunkFilter(kb_ids=("kb1",)))  # read from the table
    wait_for_copy(store, ("kb1",))
    store.vector_search(unit(1), 1, ChunkFilter(kb_ids=("kb1",)))  # from the copy
    after = store.kb_copies()
    assert (after.copies, after.made) == (1, 1)
    assert 0 < after.megabytes < 1
    assert after.searches_from_copies >= 2  # wait_for_copy's last ask and the search
    assert after.searches_from_table >= 2  # the first search and the ask that requested it
