"""A whole big LanceDB table copied into memory (``table_copy_mb``): the shared store suite
runs on the copy, and a copy never answers for a table version it does not hold.

"Big" is a vector_index_min_rows of 4 against the five-chunk corpus, so the table is
past the ANN threshold and its copy's vectors go through the in-memory IVF index."""

import mmap
import time

import numpy as np
import pyarrow as pa
import pytest

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.store import LanceChunkStore
from citewell.stores.memory import shared_copy
from citewell.stores.memory.changes import ChangedCopy
from citewell.stores.memory.shared_copy import read_copy, write_copy
from citewell.stores.memory.snapshot import TableScan, TableSnapshot
from citewell.testing.conformance import CORPUS, DIM, ScanConformance, make_chunk, unit
from citewell.types import ChunkFilter

pytestmark = pytest.mark.conformance

POLICY = VectorIndexPolicy(min_rows=4)


def open_store(path, table_copy_mb=64, cls=LanceChunkStore, copies_dir=None):
    store = cls(
        path, "chunks_test", DIM, POLICY, kb_snapshot_mb=0, table_copy_mb=table_copy_mb,
        copies_dir=copies_dir,
    )  # fmt: skip
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


class TestLanceChunkStoreWithSharedCopy(ScanConformance):
    """The same suite on a copy mapped from the files every process of a machine shares."""

    @pytest.fixture
    def store(self, tmp_path):
        return open_store(tmp_path / "lance", cls=CopyWaitingStore, copies_dir=tmp_path / "copies")


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


def test_a_write_is_searched_beside_the_copy_it_leaves_in_place(tmp_path):
    store = open_store(tmp_path / "lance")
    store.upsert(CORPUS)
    copy = wait_for_copy(store)
    store.upsert([make_chunk("c9", "f9", ("kb1",), "A ninth chunk.", 6)])
    found = store.vector_search(unit(6), 1, ChunkFilter(kb_ids=("kb1",)))
    assert found[0].chunk_id == "c9"  # from LanceDB or the copy with the change: never stale
    changed = wait_for_copy(store)
    assert isinstance(changed, ChangedCopy) and changed.copy is copy  # not made again
    assert "c9" in changed.get(["c9"]) and store.table_copy().changed_rows == 1
    assert store.keyword_search("ninth", 5, ChunkFilter())[0].chunk_id == "c9"


def test_a_rewritten_or_deleted_file_is_not_found_by_its_old_rows(tmp_path):
    store = open_store(tmp_path / "lance")
    store.upsert(CORPUS)
    wait_for_copy(store)
    store.delete(ChunkFilter(file_ids=("f1",)))
    store.upsert([make_chunk("c3", "f2", ("kb2",), "The cafeteria now opens at eight.", 5)])
    wait_for_copy(store)
    everything = ChunkFilter()
    assert {h.chunk_id for h in store.keyword_search("leav", 5, everything)} == set()
    assert store.vector_search(unit(0), 1, ChunkFilter(kb_ids=("kb1",)))[0].chunk_id != "c1"
    assert store.vector_search(unit(5), 1, ChunkFilter(kb_ids=("kb2",)))[0].chunk_id == "c3"
    assert store.vector_search(unit(2), 5, ChunkFilter(kb_ids=("kb2",)))[0].chunk_id != "c3"
    assert store.get(["c1", "c3"])[0].text == "The cafeteria now opens at eight."
    assert [h.chunk_id for h in store.keyword_search("lunch", 5, everything)] == []


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


def test_processes_of_one_machine_map_one_copy(tmp_path):
    first = open_store(tmp_path / "lance", copies_dir=tmp_path / "copies")
    first.upsert(CORPUS)
    mapped = wait_for_copy(first)
    assert isinstance(mapped.vectors.codes.base, mmap.mmap)  # the file's pages, not a private array
    (built,) = (tmp_path / "copies" / "chunks_test").glob("v*")
    made = built.stat().st_mtime_ns
    second = open_store(tmp_path / "lance", copies_dir=tmp_path / "copies")  # as another process
    other = wait_for_copy(second)
    assert built.stat().st_mtime_ns == made  # read, not built again
    assert other.version == mapped.version and isinstance(other.vectors.codes.base, mmap.mmap)
    hits = second.vector_search(unit(0), 5, ChunkFilter(kb_ids=("kb1",)))
    assert hits[0].chunk_id == "c1" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    found = second.keyword_search("leav", 5, ChunkFilter(kb_ids=("kb1",)))
    assert {h.chunk_id for h in found} == {"c1", "c2"}


def test_writes_keep_the_shared_copy_and_a_new_one_replaces_the_old_ones(tmp_path, monkeypatch):
    store = open_store(tmp_path / "lance", copies_dir=tmp_path / "copies")
    store.upsert(CORPUS)
    wait_for_copy(store)
    copies = tmp_path / "copies" / "chunks_test"
    for n in range(3):
        store.upsert([make_chunk(f"n{n}", f"fn{n}", ("kb1",), f"New chunk {n}.", n)])
        assert f"n{n}" in wait_for_copy(store).get([f"n{n}"])
    assert len(list(copies.glob("v*"))) == 1  # the files written since are beside it
    beside: list[int] = []  # copies on disk while each new one was written
    written = shared_copy.write_copy

    def counted(scan, path, index):
        beside.append(len(list(copies.glob("v*"))))
        written(scan, path, index)

    monkeypatch.setattr(shared_copy, "write_copy", counted)
    for kb in ("kb3", "kb2"):  # a delete by KB names no files: the copy is made again
        store.delete(ChunkFilter(kb_ids=(kb,)))
        assert not isinstance(wait_for_copy(store), ChangedCopy)
    kept = sorted(p.name for p in copies.glob("v*"))
    assert len(kept) == 2  # the newest two; a process mapping an older one keeps its pages
    assert beside == [1, 1]  # only the copy in use while the next was written


def test_a_copy_read_back_from_its_files_searches_as_the_one_built(tmp_path):
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((5000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    terms = [f"w{i % 97} w{i % 13} common" for i in range(5000)]
    data = pa.table({
        "id": [f"c{i}" for i in range(5000)], "file_id": [f"f{i // 10}" for i in range(5000)],
        "kb_ids": [["a"] if i % 9 else ["a", "b"] for i in range(5000)],
        "idx": pa.array([i % 10 for i in range(5000)], pa.int32()), "text": terms,
        "start": [0] * 5000, "end": [1] * 5000, "page": pa.array([None] * 5000, pa.int32()),
        "headings": [[] for _ in range(5000)], "file_name": ["x.md"] * 5000, "terms": terms,
        "vector": list(vectors),
    })  # fmt: skip
    policy = VectorIndexPolicy(min_rows=100)
    built = TableSnapshot.from_arrow(7, data, 16, policy)
    assert built.ann is not None and built.ann.index is not None  # faiss codes written too
    write_copy(TableScan.of(7, data, batch_rows=700), tmp_path / "v7", policy)
    read = read_copy(tmp_path / "v7", policy)
    for where in (ChunkFilter(), ChunkFilter(kb_ids=("b",)), ChunkFilter(file_ids=("f3",))):
        mine, theirs = read.search(vectors[42], 10, where), built.search(vectors[42], 10, where)
        assert [h[0] for h in mine] == [h[0] for h in theirs]
        # scored from 16-bit codes, not float32 rows: within about 1e-5
        assert [h[1] for h in mine] == pytest.approx([h[1] for h in theirs], abs=1e-4)
        words = ["w5", "common"]
        mine = read.keyword_search(words, 10, where)
        theirs = built.keyword_search(words, 10, where)  # the copy's impacts are float16
        assert [h[1] for h in mine] == pytest.approx([h[1] for h in theirs], rel=1e-3)
    assert read.get(["c7"]) == built.get(["c7"])


def test_a_restarted_process_takes_the_saved_copy_and_the_writes_since(tmp_path):
    first = open_store(tmp_path / "lance", copies_dir=tmp_path / "copies")
    first.upsert(CORPUS)
    wait_for_copy(first)
    first.upsert([make_chunk("c9", "f9", ("kb1",), "A ninth chunk.", 6)])
    first.delete(ChunkFilter(file_ids=("f2",)))
    # as the process started again after a crash: the copy on disk is older than the table
    restarted = open_store(tmp_path / "lance", copies_dir=tmp_path / "copies")
    copy = wait_for_copy(restarted)
    assert isinstance(copy, ChangedCopy) and copy.changed_rows == 1
    assert len(list((tmp_path / "copies" / "chunks_test").glob("v*"))) == 1  # not made again
    assert restarted.vector_search(unit(6), 1, ChunkFilter())[0].chunk_id == "c9"
    assert restarted.keyword_search("lunch", 5, ChunkFilter()) == []  # f2 is gone


def test_a_dropped_table_takes_its_journal_and_saved_copies_along(tmp_path):
    store = open_store(tmp_path / "lance", copies_dir=tmp_path / "copies")
    store.upsert(CORPUS)
    wait_for_copy(store)
    store.drop()
    assert not (tmp_path / "copies" / "chunks_test").exists()
    assert not (tmp_path / "lance" / "chunks_test.changes").exists()
