"""How the LanceDB store keeps its indexes as the table grows: deltas, merges, retraining."""

from __future__ import annotations

import numpy as np
import pytest

from citewell.stores.lance_upkeep import VectorIndexPolicy, newest_to_merge
from citewell.stores.lancedb import LanceChunkStore
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


def segments(store: LanceChunkStore, column: str) -> int:
    return next(i.num_segments for i in store._table.list_indices() if i.columns[0] == column)


@pytest.fixture
def policy() -> VectorIndexPolicy:
    return VectorIndexPolicy(
        min_rows=200, rows_per_partition=300, max_deltas=2, vector_delta_rows=1
    )


def test_vector_index_is_trained_at_the_threshold_and_again_when_the_table_doubles(
    tmp_path, policy
):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 150)
    assert store.health(0).vector_index == "exact (in memory)"
    grow(store, 150, 100)
    health = store.health(0)
    assert (health.vector_index, health.trained_rows, health.partitions) == ("IvfHnswSq", 250, 1)
    grow(store, 250, 100)  # 350 < 2 x 250: a delta segment, no retraining
    assert store.health(0).trained_rows == 250
    assert store.health(0).unindexed_rows == 0
    grow(store, 350, 200)  # 550 >= 2 x 250: trained anew, with the partitions 550 rows get
    health = store.health(0)
    assert (health.trained_rows, health.partitions, health.segments["vector"]) == (550, 2, 1)


def test_deltas_are_merged_when_there_are_too_many(tmp_path, policy):
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 300)
    for n in range(4):
        grow(store, 300 + 10 * n, 10)
        assert segments(store, "terms") <= policy.max_deltas + 1
    hits = store.keyword_search("w335", 5, ChunkFilter())
    assert [h.chunk_id for h in hits] == ["c335"]  # rows in merged deltas are found


def test_an_index_of_another_layout_is_trained_anew(tmp_path, policy):
    from lancedb.index import HnswSq

    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 300)
    # What an older release made: LanceDB's default layout (many partitions on big tables).
    old = HnswSq(distance_type="cosine", num_partitions=4)
    store._table.create_index("vector", config=old, replace=True)
    assert store.health(0).partitions > 1
    grow(store, 300, 10)
    assert (store.health(0).trained_rows, store.health(0).partitions) == (310, 2)


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


@pytest.mark.parametrize(
    ("sizes", "merged"),
    [
        ([1000, 10, 10, 10, 10], 4),  # the newest add up to less than the base: all deltas
        ([1000, 90, 10, 10, 10], 3),  # three small ones, not into the bigger one before them
        ([1000, 40, 30, 20, 10], 2),  # 10 + 20 fit under 30
        ([1000, 25000, 825000, 256], 0),  # not the big one for 256 rows: wait for more
        ([1000, 10], 0),  # never the base
    ],
)
def test_merges_take_the_newest_segments_that_fit_under_the_one_before(sizes, merged):
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
