"""A whole big LanceDB table copied into memory (``table_copy_mb``): the shared store suite
runs on the copy, and a copy never answers for a table version it does not hold.

"Big" is a vector_index_min_rows of 4 against the five-chunk corpus, so the table is
past the ANN threshold and its copy's vectors go through the in-memory IVF index."""

import time

import pytest

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.store import LanceChunkStore
from citewell.testing.conformance import CORPUS, DIM, ScanConformance, make_chunk, unit
from citewell.types import ChunkFilter

pytestmark = pytest.mark.conformance

POLICY = VectorIndexPolicy(min_rows=4)


def open_store(path, table_copy_mb=64, cls=LanceChunkStore):
    store = cls(path, "chunks_test", DIM, POLICY, kb_snapshot_mb=0, table_copy_mb=table_copy_mb)
    store._snapshots._quiet = 0.0  # no ingestion to wait out here
    return store


class CopyWaitingStore(LanceChunkStore):
    """Waits for the table's copy before each search once the table is big, so every
    search of the shared suite runs on it (a server reads LanceDB while it is made)."""

    def _current_snapshot(self):
        deadline = time.monotonic() + 10
        while (found := super()._current_snapshot()) is None and time.monotonic() < deadline:
            if self._table.count_rows() < self.vector_index.min_rows:
                return None
            time.sleep(0.02)
        return found


class TestLanceChunkStoreWithTableCopy(ScanConformance):
    @pytest.fixture
    def store(self, tmp_path):
        return open_store(tmp_path / "lance", cls=CopyWaitingStore)


def wait_for_copy(store: LanceChunkStore):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = store._current_snapshot()
        if found is not None:
            return found
        time.sleep(0.02)
    raise AssertionError("no in-memory copy of the table within 10 s")


def test_a_big_table_is_searched_from_its_copy_with_an_ivf_index(tmp_path):
    store = open_store(tmp_path / "lance")
    store.upsert(CORPUS)
    copy = wait_for_copy(store)
    assert copy.ann is not None  # five rows: no IVF partitions, every search exact
    assert copy.nbytes > copy.vectors.nbytes
    hits = store.vector_search(unit(0), 5, ChunkFilter(kb_ids=("kb1",)))
    assert hits[0].chunk_id == "c1" and hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_a_write_sets_the_copy_aside_until_a_new_one_holds_it(tmp_path):
    store = open_store(tmp_path / "lance")
    store.upsert(CORPUS)
    wait_for_copy(store)
    store.upsert([make_chunk("c9", "f9", ("kb1",), "A ninth chunk.", 6)])
    found = store.vector_search(unit(6), 1, ChunkFilter(kb_ids=("kb1",)))
    assert found[0].chunk_id == "c9"  # from LanceDB or from a new copy: never the old one
    assert "c9" in wait_for_copy(store).row_of


def test_another_process_write_is_seen_before_the_copy_is_used_again(tmp_path):
    store = open_store(tmp_path / "lance")
    store.upsert(CORPUS)
    old = wait_for_copy(store)
    other = open_store(tmp_path / "lance", table_copy_mb=0)
    other.delete(ChunkFilter(file_ids=("f1",)))
    time.sleep(1.1)  # LanceDB's version is read at most once a second
    assert store._current_snapshot() is not old
    hits = store.vector_search(unit(0), 5, ChunkFilter(kb_ids=("kb1",)))
    assert "c1" not in {h.chunk_id for h in hits}


def test_no_copy_without_memory_for_it(tmp_path):
    store = open_store(tmp_path / "lance", table_copy_mb=0)
    store.upsert(CORPUS)
    time.sleep(0.3)
    assert store._current_snapshot() is None
    assert store.vector_search(unit(0), 1, ChunkFilter(kb_ids=("kb1",)))[0].chunk_id == "c1"


def test_the_copy_and_its_recall_are_reported(tmp_path):
    store = open_store(tmp_path / "lance")
    empty = store.table_copy()
    assert (empty.rows, empty.state) == (0, "not_needed")  # nothing written: nothing copied
    store.upsert(CORPUS)
    wait_for_copy(store)
    stats = store.table_copy(recall_samples=5)
    assert (stats.current, stats.rows, stats.budget_mb, stats.state) == (True, 5, 64, "current")
    assert stats.partitions == 0 and stats.megabytes > 0
    assert (stats.recall_at_50, stats.recall_samples) == (1.0, 5)
