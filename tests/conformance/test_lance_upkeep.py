"""How the LanceDB store keeps its indexes as the table grows: deltas, merges, retraining."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance import scratch
from citewell.stores.lance import search_table as lance_search_table
from citewell.stores.lance.store import LanceChunkStore
from citewell.stores.lance.upkeep import MERGE_AT_MOST, newest_to_merge
from citewell.types import ChunkFilter, StoredChunk

pytestmark = pytest.mark.conformance

DIM = 16


def chunks(start: int, count: int) -> list[StoredChunk]:
    rng = np.random.default_rng(start)
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        StoredChunk(
            id=f"c{i}",
            file_id=f"f{i // 4}",
            kb_ids=(f"kb{i % 3}",),
            index=i % 4,
            text=f"chunk {i}",
            start=0,
            end=8,
            page=None,
            headings=(),
            file_name="f.md",
            terms=f"chunk w{i} w{i % 7}",
            vector=tuple(vectors[i - start].tolist()),
        )  # fmt: skip
        for i in range(start, start + count)
    ]


def grow(store: LanceChunkStore, start: int, count: int) -> None:
    store.upsert(chunks(start, count))
    store.optimize()
    assert store.wait_for_training(30)  # a retraining runs in the background


def segments(store: LanceChunkStore, column: str) -> int:
    return next(i.num_segments for i in store._table.list_indices() if i.columns[0] == column)


@pytest.fixture
def policy() -> VectorIndexPolicy:
    return VectorIndexPolicy(min_rows=200, max_deltas=2, vector_delta_rows=1, index_delta_rows=1)


def test_vector_index_is_trained_at_the_threshold_and_again_when_the_table_doubles(
    tmp_path, policy
):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 150)
    assert store.health(0).vector_index == "exact (in memory)"
    grow(store, 150, 100)
    health = store.health(0)
    assert (health.vector_index, health.trained_rows, health.partitions) == ("IvfSq", 250, 16)
    assert health.unindexed_rows == 0  # the full-text and scalar indexes got the rows too
    grow(store, 250, 100)  # 350 < 2 x 250: a delta segment, no retraining
    assert store.health(0).trained_rows == 250
    assert store.health(0).unindexed_rows == 0
    grow(store, 350, 200)  # 550 >= 2 x 250: trained anew, with the partitions 550 rows get
    health = store.health(0)
    assert (health.trained_rows, health.partitions, health.segments["vector"]) == (550, 23, 1)


def test_the_first_training_runs_beside_the_other_indexes_taking_the_rows_in(
    tmp_path, policy, monkeypatch
):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    upkeep, deltas_done, waited = store._upkeep, threading.Event(), []
    build, add_deltas = upkeep._build_vectors, upkeep._add_deltas

    def build_after_the_deltas(*args, **kwargs):  # one after the other, this waits in vain
        waited.append(deltas_done.wait(10))
        build(*args, **kwargs)

    def deltas(*args, **kwargs):
        add_deltas(*args, **kwargs)
        deltas_done.set()

    monkeypatch.setattr(upkeep, "_build_vectors", build_after_the_deltas)
    monkeypatch.setattr(upkeep, "_add_deltas", deltas)
    grow(store, 0, 250)
    health = store.health(0)
    assert waited == [True]
    assert (health.vector_index, health.trained_rows, health.unindexed_rows) == ("IvfSq", 250, 0)


def test_deltas_are_merged_when_there_are_too_many(tmp_path, policy):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 300)
    for n in range(4):
        grow(store, 300 + 10 * n, 10)
        assert segments(store, "terms") <= policy.max_deltas + 1
    hits = store.keyword_search("w335", 5, ChunkFilter())
    assert [h.chunk_id for h in hits] == ["c335"]  # rows in merged deltas are found


def test_segment_sizes_from_the_manifest_match_lances_statistics(tmp_path):
    """Merges are chosen from segment sizes read from the manifest, not from Lance's index
    statistics, which leave a file open for good on every read."""
    policy = VectorIndexPolicy(min_rows=100, max_deltas=8, vector_delta_rows=1, index_delta_rows=1)
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 150)
    for n in range(3):
        grow(store, 150 + 10 * n, 10)
    upkeep = store._upkeep
    for name in upkeep.index_names().values():
        stats = upkeep._dataset().stats.index_stats(name)
        assert upkeep._segment_rows(name) == stats["num_indexed_rows_per_delta"], name
    assert len(upkeep._segment_rows(upkeep.index_names()["terms"])) == 4


def test_the_vector_layout_is_read_once_per_trained_index(tmp_path, policy, monkeypatch):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    reads = []
    read_layout = store._upkeep._read_layout
    monkeypatch.setattr(
        store._upkeep, "_read_layout", lambda name: reads.append(name) or read_layout(name)
    )
    grow(store, 0, 250)  # trains at 200 rows
    for n in range(5):
        grow(store, 250 + 10 * n, 10)
    assert store.health(0).trained_rows == 250
    assert len(reads) == 1
    grow(store, 300, 250)  # doubled: trained anew, read again
    assert store.health(0).trained_rows == 550
    assert len(reads) == 2


@pytest.mark.parametrize(
    "old",
    [
        {"kind": "HnswSq", "num_partitions": 2},  # what the previous release trained
        {"kind": "IvfSq", "num_partitions": 4},  # the right kind, too few partitions
    ],
)
def test_an_index_of_another_layout_or_type_is_trained_anew(tmp_path, policy, old):
    import lancedb.index

    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 300)
    config = getattr(lancedb.index, old["kind"])(
        distance_type="cosine", num_partitions=old["num_partitions"]
    )
    store._table.create_index("vector", config=config, replace=True)
    assert store.health(0).partitions == old["num_partitions"]
    grow(store, 300, 10)
    health = store.health(0)
    assert (health.vector_index, health.trained_rows, health.partitions) == ("IvfSq", 310, 18)


def test_a_table_from_an_older_release_gets_the_kb_index_when_opened(tmp_path, policy):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 20)
    store._table.drop_index("kb_ids_idx")
    reopened = LanceChunkStore(tmp_path, "t", DIM, policy)
    assert "kb_ids" in reopened._upkeep.index_names()
    assert reopened.count(ChunkFilter(kb_ids=("kb1",))) == 7


def test_health_measures_recall_against_exact_search(tmp_path, policy):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 400)
    health = store.health(recall_samples=10)
    assert health.recall_samples == 10
    assert health.recall_at_50 is not None and health.recall_at_50 >= 0.9
    assert health.rows == 400


def test_recall_check_reads_the_exact_neighbours_in_one_pass(tmp_path, policy, monkeypatch):
    """The recall check's exact top k, scored in one pass over the table in batches (made
    small here, so that the best rows carried between batches count), is LanceDB's own
    exact search's, deleted rows left out."""
    from citewell.stores.lance import ann

    monkeypatch.setattr(ann, "PASS_BATCH", 50)
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 400)
    store.delete(ChunkFilter(file_ids=("f3", "f40")))
    table = store._table
    gone = [c.vector for c in chunks(0, 400) if c.id in ("c12", "c160")]  # their own best
    queries = np.array(gone + [c.vector for c in chunks(1000, 4)], dtype=np.float32)
    for query, found in zip(queries, ann.exact_neighbours(table, queries, k=9), strict=True):
        exact = table.search(query).distance_type("cosine").bypass_vector_index().limit(10)
        truth = [(r["id"], r["_distance"]) for r in exact.select(["id", "_distance"]).to_list()]
        assert found == {i for i, _ in truth[:9]} and truth[8][1] < truth[9][1]
        assert not found & {"c12", "c160"}


def test_vector_rows_wait_for_a_delta_of_their_own_and_are_found_meanwhile(tmp_path, policy):
    from dataclasses import replace

    store = LanceChunkStore(tmp_path, "t", DIM, replace(policy, vector_delta_rows=50))
    grow(store, 0, 300)
    grow(store, 300, 20)  # too few for a vector delta: searched exactly until there are more
    assert store.health(0).segments["vector"] == 1
    assert store.health(0).unindexed_rows == 20
    newest = chunks(300, 20)[-1]
    assert store.vector_search(list(newest.vector), 1, ChunkFilter())[0].chunk_id == "c319"
    assert [h.chunk_id for h in store.keyword_search("w319", 5, ChunkFilter())] == ["c319"]
    grow(store, 320, 40)  # 60 waiting: now they get their delta
    assert (store.health(0).segments["vector"], store.health(0).unindexed_rows) == (2, 0)


def test_rows_are_fetched_by_address_and_by_id_when_an_address_went_stale(tmp_path, policy):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 300)
    wanted = chunks(0, 300)[123]
    hits = store.vector_search(list(wanted.vector), 3, ChunkFilter())
    assert [c.id for c in store.get([hits[0].chunk_id])] == ["c123"]
    assert store._addresses.take(["c123"], ["id", "text"])["c123"]["text"] == "chunk 123"
    # A compaction moves rows; an address remembered before it must not return another row.
    store._addresses._addresses["c123"] = store._addresses._addresses[hits[1].chunk_id]
    assert [(c.id, c.text) for c in store.get(["c123"])] == [("c123", "chunk 123")]


def test_rows_written_after_the_handle_was_opened_are_fetched_not_a_server_error(tmp_path, policy):
    """Other processes write; this one's search finds their rows, whose addresses lie in
    fragments its kept handle never saw. Lance raises on some such takes and panics on
    others (a BaseException, seen as a 500 after an upload): either way the take misses,
    the rows come back by id, and the handle is opened anew."""
    import lance

    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    store.upsert(chunks(0, 300))
    first = lance.dataset(store._addresses.uri, version=1)  # as early as a handle can be
    LanceChunkStore(tmp_path, "t", DIM, policy).upsert(chunks(300, 5))  # another process
    store._addresses.remember([*_addresses(store, "c302"), *_addresses(store, "c5")])
    for ids in (["c302", "c5"], ["c5", "c302"]):
        store._addresses._dataset = first
        assert store._addresses.take(ids, ["id", "text"]) == {}  # missed
        assert store._addresses._dataset is None  # opened anew at the next take
        found = store._addresses.take(ids, ["id", "text"])
        assert {k: r["text"] for k, r in found.items()} == {"c302": "chunk 302", "c5": "chunk 5"}
    store._addresses._dataset = first
    assert [c.id for c in store.get(["c302", "c5"])] == ["c302", "c5"]


def _addresses(store: LanceChunkStore, chunk_id: str) -> list[dict]:
    """The chunk's row address in the table's latest version, as a search would note it."""
    import lance

    latest = lance.dataset(store._addresses.uri)
    return latest.to_table(
        columns=["id"], filter=f"id = '{chunk_id}'", with_row_id=True
    ).to_pylist()


def test_probes_grow_with_the_table_and_as_a_filter_keeps_fewer_rows():
    policy = VectorIndexPolicy()
    assert policy.partitions(1_000_000) == 1000
    assert policy.nprobes(1_000_000, 1_000_000) == 80  # measured: 64 probes gave 0.970
    assert policy.nprobes(1_000_000, 100_000) == 143  # measured: 120 probes gave 0.965
    assert policy.nprobes(1_000_000, 10_000) == 253  # measured: 250 probes gave 0.971
    assert policy.nprobes(1_000_000, 0) == 1000  # an empty filter: cap at all partitions
    assert policy.nprobes(60_000, 60_000) == 40  # measured: 32 probes gave 0.949
    assert policy.nprobes(100, 100) == 10  # never more partitions than there are


@pytest.mark.parametrize(
    ("sizes", "merged"),
    [
        ([1000, 10, 10, 10, 10], 4),  # the newest add up to less than the base: all deltas
        ([1000, 90, 10, 10, 10], 3),  # three small ones, not into the bigger one before them
        ([1000, 40, 30, 20, 10], 4),  # each no more than twice the newer ones together
        ([5000, 2000, 256, 256], 2),  # two batches merge; not into the bigger one
        ([825000, 29858, 1536, 256], 0),  # the newest alone: wait for a similar one
        ([1000, 25000, 825000, 256], 0),  # not the big one for 256 rows: wait for more
        ([1000, 10], 0),  # never the base
    ],
)
def test_merges_take_the_newest_segments_of_similar_size(sizes, merged):
    assert newest_to_merge(sizes) == merged


def test_many_deleted_rows_are_compacted_away(tmp_path, policy):
    import lance

    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 100)
    store.delete(ChunkFilter(file_ids=tuple(f"f{i}" for i in range(10))))  # 40 rows
    store.optimize()
    fragments = lance.dataset(store._table.uri).get_fragments()
    assert sum(f.physical_rows for f in fragments) == 60
    assert store.count(ChunkFilter()) == 60
    assert [h.chunk_id for h in store.keyword_search("w77", 5, ChunkFilter())] == ["c77"]


def fragment_rows(store: LanceChunkStore) -> list[int]:
    import lance

    return [f.count_rows() for f in lance.dataset(store._table.uri).get_fragments()]


def test_a_flushs_new_fragments_are_merged_before_they_are_indexed(tmp_path, policy):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 300)
    before = fragment_rows(store)
    for batch in range(5):  # five upserts, one optimize: as the job runner flushes
        store.upsert(chunks(300 + batch * 10, 10))
    store.optimize()
    assert fragment_rows(store) == [*before, 50]  # one new fragment, older ones untouched
    assert store.health(0).unindexed_rows == 0
    hits = store.keyword_search("w321", 5, ChunkFilter(kb_ids=("kb0",)))
    assert [h.chunk_id for h in hits] == ["c321"]
    vector = chunks(340, 10)[5].vector  # as upserted: vectors are seeded per batch
    assert store.vector_search(vector, 1, ChunkFilter())[0].chunk_id == "c345"


def test_new_fragments_wait_for_the_delta_that_takes_them_in(tmp_path, policy):
    """Merging the new rows' fragments at every write cost 0.03-0.05 s a write at ten
    million rows; they are merged when an index is about to take them in."""
    policy = replace(policy, index_delta_rows=30, vector_delta_rows=30)
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 300)
    before = fragment_rows(store)
    for batch in range(2):
        grow(store, 300 + batch * 10, 10)
    assert fragment_rows(store) == [*before, 10, 10]  # searched flat meanwhile
    assert store.health(0).unindexed_rows == 20
    assert [h.chunk_id for h in store.keyword_search("w315", 5, ChunkFilter())] == ["c315"]
    grow(store, 320, 10)  # 30 rows wait: merged into one fragment, then indexed
    assert fragment_rows(store) == [*before, 30]
    assert store.health(0).unindexed_rows == 0


def test_indexed_small_fragments_wait_until_16_more_have_gathered(tmp_path, policy):
    """Lance merges only neighbours under the same index segments: a compaction may leave
    many small fragments, and is not tried again after every batch (0.4-1.6 s each at a
    million rows) but once 16 more have gathered."""
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    for batch in range(16):  # one fragment each, indexed before the next arrives
        grow(store, batch * 10, 10)
    assert len(fragment_rows(store)) == 16
    grow(store, 160, 10)  # 17 small ones: more than 16, compacted
    left = len(fragment_rows(store))
    assert left < 17
    for batch in range(17, 17 + 16):
        grow(store, batch * 10, 10)
    assert len(fragment_rows(store)) == left + 16  # not yet: 16 more, not more than 16
    grow(store, 330, 10)
    assert len(fragment_rows(store)) < left + 17
    assert store.count(ChunkFilter()) == 340
    assert [h.chunk_id for h in store.keyword_search("w333", 5, ChunkFilter())] == ["c333"]


def test_lancedb_caches_stay_within_the_configured_size(tmp_path, policy):
    """Each write batch adds index segments that searches read into LanceDB's cache; old
    ones are never read again, so only the cache's bound stops the growth (seen in a soak:
    +400 MB in 10 minutes under LanceDB's 6 GB default)."""

    def cached_after_writes(cache_mb: int) -> int:
        store = LanceChunkStore(tmp_path / str(cache_mb), "t", DIM, policy, cache_mb=cache_mb)
        store.warm_searches()  # as a server: each renewed handle loads the indexes
        for batch in range(30):
            grow(store, batch * 20, 20)
            for word in range(5):
                where = ChunkFilter(kb_ids=("kb1",))
                assert store.keyword_search(f"chunk w{word}", 10, where)
                store.vector_search([0.25] * DIM, 10, where)
        return int(store.cached_bytes)

    bound = (1 << 20) + (1 << 17)  # 1 MB of index cache, an eighth of it for metadata
    assert cached_after_writes(64) > 1.2 * bound  # the same work grows past it when allowed
    assert cached_after_writes(1) <= bound * 1.05


def open_index_files(store: LanceChunkStore) -> int:
    """Files of the table's indexes that this process holds open (Linux)."""
    indexes = f"{store._table.uri}/_indices/"
    links = (Path("/proc/self/fd") / fd for fd in os.listdir("/proc/self/fd"))
    return sum(1 for link in links if indexes in _target(link))


def _target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:  # closed since it was listed
        return ""


def test_open_index_files_stay_bounded_while_writes_and_searches_alternate(tmp_path, monkeypatch):
    """LanceDB's cache keeps every full-text segment a search read, file open, until the
    cache fills by bytes, and merges keep replacing small segments: about one open file
    per write batch in a soak, without bound (here 20 after 100 batches). Searches now go
    through a handle renewed every so many versions (here 30, about ten batches)."""
    monkeypatch.setattr(lance_search_table, "CHECK_EVERY_SECONDS", 0.0)
    rng = random.Random(1)

    def words(count: int) -> str:
        return " ".join(f"w{rng.randrange(3000)}" for _ in range(count))

    def batch(start: int, count: int) -> list[StoredChunk]:
        return [replace(c, terms=words(60)) for c in chunks(start, count)]

    policy = VectorIndexPolicy(min_rows=0, vector_delta_rows=10_000, index_delta_rows=1)
    store = LanceChunkStore(tmp_path, "t", DIM, policy, renew_after_versions=30)
    store.upsert(batch(0, 1000))
    store.optimize()
    held = []
    for number in range(100):
        store.upsert(batch(1000 + number * 5, 5))
        store.optimize()
        for _ in range(5):
            store.keyword_search(words(4), 5, ChunkFilter(kb_ids=("kb1",)))
        held.append(open_index_files(store))
    assert max(held) <= 12, held


def test_new_files_are_appended_and_held_ones_merged_by_id(tmp_path, monkeypatch):
    store = LanceChunkStore(tmp_path, "chunks", DIM)
    written: list[str] = []
    table = type(store._table)
    for name in ("add", "merge_insert"):
        original = getattr(table, name)
        monkeypatch.setattr(table, name, lambda self, *a, _o=original, _n=name, **k: (
            written.append(_n), _o(self, *a, **k))[1])  # fmt: skip
    store.upsert(chunks(0, 8))  # files f0 and f1: new
    store.upsert(chunks(4, 8))  # f1 held: merged, its rows replaced by id
    assert written == ["add", "merge_insert"]
    assert store.count(ChunkFilter()) == 12
    same = chunks(20, 2)
    store.upsert([same[0], replace(same[1], id=same[0].id)])  # one id twice: the last kept
    assert store.count(ChunkFilter(file_ids=("f5",))) == 1
    assert store.get([same[0].id])[0].text == same[1].text


def test_a_long_import_folds_new_rows_into_the_id_indexes(tmp_path, monkeypatch):
    from citewell.stores.lance import store as lance_store

    monkeypatch.setattr(lance_store, "FOLD_KEYS_AFTER_ROWS", 30)
    store = LanceChunkStore(tmp_path, "chunks", DIM, VectorIndexPolicy(index_delta_rows=1))
    store.upsert(chunks(0, 20))  # the first write makes the indexes: its rows are in them

    def unindexed(column: str) -> int:
        store._table.checkout_latest()
        found = {i.columns[0]: i.name for i in store._table.list_indices()}
        return int(store._table.index_stats(found[column]).num_unindexed_rows)

    store.upsert(chunks(20, 20))  # 40 rows written: folded
    assert unindexed("id") == unindexed("file_id") == 0
    assert unindexed("terms") == 20  # the full-text index waits for the optimize
    store.upsert(chunks(40, 20))
    assert unindexed("id") == unindexed("file_id") == 20
    store.optimize()
    store.upsert(chunks(60, 20))  # counted from the optimize on
    assert unindexed("id") == 20


def test_a_long_imports_key_deltas_are_merged_at_most_32_at_a_time(tmp_path, monkeypatch):
    """A ten-million-chunk import folded 153 deltas into each key index, and one merge of
    them all took more than Lance's 150 MB pool for a merge (which cannot spill): the
    import's closing step failed. Merges take at most 32 segments, as often as needed."""
    from lance.dataset import DatasetOptimizer

    from citewell.stores.lance import store as lance_store

    merged: list[int] = []
    optimize_indices = DatasetOptimizer.optimize_indices

    def counted(optimizer: DatasetOptimizer, **options) -> None:
        merged.append(options.get("num_indices_to_merge", 1))
        optimize_indices(optimizer, **options)

    monkeypatch.setattr(lance_store, "FOLD_KEYS_AFTER_ROWS", 100)
    policy = VectorIndexPolicy(index_delta_rows=1)
    store = LanceChunkStore(tmp_path, "chunks", DIM, policy)
    for start in range(0, 7_100, 100):
        store.upsert(chunks(start, 100))
    assert segments(store, "id") == segments(store, "file_id") == 71
    monkeypatch.setattr(DatasetOptimizer, "optimize_indices", counted)
    store.optimize()
    assert max(merged) == MERGE_AT_MOST == 32
    assert segments(store, "id") <= policy.max_deltas + 1
    assert segments(store, "file_id") <= policy.max_deltas + 1
    assert store.get(["c7050"])[0].text == "chunk 7050"
    assert store.count(ChunkFilter(file_ids=("f1762",))) == 4


def test_an_exiting_process_waits_for_a_search_handle_being_warmed(tmp_path):
    """LanceDB stops its runtime at exit; a process whose search handle was still being
    warmed then hung there for good (a benchmark's import never exited). It waits now."""
    warmed = tmp_path / "warmed"
    script = f"""
import time
from pathlib import Path
from citewell.stores.lance.store import LanceChunkStore

store = LanceChunkStore(Path({str(tmp_path)!r}), "t", 16)
store.warm_searches()  # a serving process: renewals warm their handles too
store._search.wait()
warm = store._search._warm
def slowly(table):
    time.sleep(0.5)
    warm(table)
    table.count_rows()
    Path({str(warmed)!r}).touch()
store._search._warm = slowly
store._search.renew()
"""
    done = subprocess.run([sys.executable, "-c", script], timeout=120, check=False)
    assert done.returncode == 0
    assert warmed.exists()


def test_only_a_process_that_serves_searches_warms_its_search_handles(tmp_path, monkeypatch):
    """Loading LanceDB's indexes took 1.3 GB and seconds of CPU at a million chunks in every
    process that opened the table: commands (``check``, ``import``) and job workers, which
    never search, and an import waited at exit for the handle its training renewed."""
    warmed: list[int] = []
    monkeypatch.setattr(LanceChunkStore, "_warm", lambda self, table: warmed.append(1))
    store = LanceChunkStore(tmp_path, "t", DIM)
    store.upsert(chunks(0, 8))
    store._search.renew().join()  # as after a training: the new handle is opened cold
    assert warmed == [] and store.vector_search(chunks(0, 1)[0].vector, 1, ChunkFilter())
    store.warm_searches()  # what the server does at start
    assert store._search.wait(30) and warmed == [1]
    store._search.renew().join()
    assert warmed == [1, 1]


def test_the_text_and_key_indexes_take_new_rows_in_deltas_of_index_delta_rows(tmp_path):
    """A delta of the full-text index costs more the bigger the index (0.13-0.49 s for 256
    rows at ten million): small writes share one, and their rows are searched flat."""
    policy = VectorIndexPolicy(min_rows=1, index_delta_rows=60)  # searches read LanceDB
    store = LanceChunkStore(tmp_path, "chunks", DIM, policy)
    store.upsert(chunks(0, 20))  # the first write makes the indexes

    def unindexed() -> dict[str, int]:
        store._table.checkout_latest()
        return {i.columns[0]: int(store._table.index_stats(i.name).num_unindexed_rows)
                for i in store._table.list_indices() if i.columns[0] != "vector"}  # fmt: skip

    for start in (20, 40):
        store.upsert([replace(c, terms=f"{c.terms} zebrafish") for c in chunks(start, 20)])
        store.optimize()
    assert set(unindexed().values()) == {40}  # short of 60: no delta yet
    found = store.keyword_search("zebrafish", 50, ChunkFilter())
    assert len(found) == 40  # the rows outside the index, searched flat
    store.upsert(chunks(60, 20))
    store.optimize()
    assert set(unindexed().values()) == {0}
    assert len(store.keyword_search("zebrafish", 50, ChunkFilter())) == 40


def test_vector_builds_leave_no_shuffle_files_behind(tmp_path, policy, monkeypatch):
    """Lance 9 leaves each IVF build's shuffle directory in the OS temp dir
    (lance-format/lance#8992); the store builds with TMPDIR in its own scratch folder and
    removes them there."""
    # A build of an earlier test's store may still run in this process (a training in the
    # background): TMPDIR stays where it points until the last build ends, so wait for it.
    deadline = time.monotonic() + 120
    while scratch._BUILDS.running and time.monotonic() < deadline:
        time.sleep(0.05)
    system = tmp_path / "system-tmp"
    system.mkdir()
    monkeypatch.setenv("TMPDIR", str(system))
    store = LanceChunkStore(tmp_path / "db", "t", DIM, policy)
    grow(store, 0, 250)  # the first training
    grow(store, 250, 50)  # a vector delta
    grow(store, 300, 250)  # a training in the background
    assert store.health(0).trained_rows == 550
    leftovers = list(system.rglob("shuffle_*"))
    leftovers += list((tmp_path / "db" / ".scratch").rglob("shuffle_*"))
    leftovers += list((tmp_path / "db" / ".scratch").rglob("citewell-partitions-*"))
    assert leftovers == []
    assert os.environ["TMPDIR"] == str(system)


def test_the_text_and_vector_indexes_wait_for_a_share_of_the_rows_they_hold():
    policy = VectorIndexPolicy()
    assert policy.delta_rows(10_000, vector=False) == 1024  # the floors up to a million
    assert policy.delta_rows(10_000, vector=True) == 4096
    assert policy.delta_rows(1_000_000, vector=False) == 1024
    assert policy.delta_rows(1_000_000, vector=True) == 4096
    assert policy.delta_rows(10_000_000, vector=False) == 10_000
    assert policy.delta_rows(10_000_000, vector=True) == 40_000


def test_a_big_text_index_takes_new_rows_once_a_share_of_its_rows_wait(tmp_path, policy):
    policy = replace(policy, text_delta_share=100)  # ten million's share, on 2,000 rows
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 2000)
    assert store.health(0).unindexed_rows == 0
    grow(store, 2000, 15)  # 15 < 2,000 / 100: the full-text index waits, the keys do not
    terms = next(i for i in store._table.list_indices() if i.columns[0] == "terms")
    keys = [i for i in store._table.list_indices() if i.columns[0] in ("id", "file_id")]
    assert terms.num_unindexed_rows == 15 and all(i.num_unindexed_rows == 0 for i in keys)
    assert [h.chunk_id for h in store.keyword_search("w2010", 5, ChunkFilter())] == ["c2010"]
    grow(store, 2015, 10)  # 25 >= 20: a delta
    assert store.health(0).unindexed_rows == 0


def test_old_versions_are_removed_beside_the_writes_not_under_their_lock(
    tmp_path, policy, monkeypatch
):
    """The hourly removal of old versions (6-9 s at ten million rows) runs in a thread of
    its own: writes go on while it is under way, and waiting for the store's background
    work waits for it too."""
    import lance

    from citewell.stores.lance import old_versions

    monkeypatch.setattr(old_versions, "KEEP_FOR", timedelta(0))  # every older version goes
    began, release = threading.Event(), threading.Event()
    remove = lance.LanceDataset.cleanup_old_versions

    def held(self, *args, **kwargs):
        began.set()
        assert release.wait(30)
        return remove(self, *args, **kwargs)

    monkeypatch.setattr(lance.LanceDataset, "cleanup_old_versions", held)
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    store.upsert(chunks(0, 50))
    store.optimize()  # the first optimize starts a removal
    assert began.wait(10)
    versions = len(store._table.list_versions())
    store.upsert(chunks(50, 50))
    store.optimize()  # not held up by the removal
    assert store.count(ChunkFilter()) == 100
    assert not store.wait_for_training(0.2)
    release.set()
    assert store.wait_for_training(30)
    assert len(store._table.list_versions()) < versions  # it removed what it was given
    assert store.count(ChunkFilter()) == 100
    assert not store._upkeep.old_versions.remove_when_due(store._upkeep._dataset)  # hourly
