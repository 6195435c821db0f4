"""Training the LanceDB store's vector index anew in the background, beside writes.

The training is held at a gate so the test decides what happens while it runs; the
commit itself goes through Lance's conflict rules, which these tests pin down."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Any

import pytest

from citewell.errors import StoreError
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance import training as lance_training
from citewell.stores.lance.store import LanceChunkStore
from citewell.types import ChunkFilter
from tests.conformance.test_lance_upkeep import DIM, chunks, grow, segments

pytestmark = pytest.mark.conformance


@pytest.fixture
def store(tmp_path) -> LanceChunkStore:
    policy = VectorIndexPolicy(min_rows=200, max_deltas=2, vector_delta_rows=1, index_delta_rows=1)
    store = LanceChunkStore(tmp_path, "t", DIM, policy)
    grow(store, 0, 250)  # the first training runs in optimize itself
    assert store.health(0).trained_rows == 250
    return store


def held_training(store: LanceChunkStore, monkeypatch) -> threading.Event:
    """Make the next training wait until the returned event is set."""
    gate = threading.Event()
    build = store._upkeep._build_vectors

    def wait_then_build(dataset: Any, rows: int, name: str, **more: Any) -> None:
        assert gate.wait(60)
        build(dataset, rows, name, **more)

    monkeypatch.setattr(store._upkeep, "_build_vectors", wait_then_build)
    return gate


def fragments(store: LanceChunkStore) -> int:
    return len(store._upkeep._dataset().get_fragments())


def test_writes_go_on_while_the_vector_index_is_trained_anew(store, monkeypatch):
    gate = held_training(store, monkeypatch)
    store.upsert(chunks(250, 250))
    store.optimize()  # 500 rows, twice what the index was trained on: a training starts
    assert store.health(0).training_rows == 500
    for start in (500, 520, 540):  # three flushes, one optimize
        store.upsert(chunks(start, 20))
    before = fragments(store)
    store.optimize()
    assert fragments(store) == before - 2  # the new fragments merged: the index lacks them
    store.delete(ChunkFilter(file_ids=("f0",)))  # rows the training reads
    store.upsert(chunks(560, 20))
    store.optimize()
    health = store.health(0)
    assert health.trained_rows == 250 and segments(store, "vector") == 1  # no vector delta
    assert health.segments["terms"] > 1  # the other indexes took the new rows meanwhile

    gate.set()
    assert store.wait_for_training(60)
    health = store.health(0)
    assert (health.trained_rows, health.training_rows, health.partitions) == (500, 0, 22)
    assert health.unindexed_rows == 80  # written during the training: searched flat for now
    newest = chunks(560, 20)[-1]
    assert store.vector_search(list(newest.vector), 1, ChunkFilter())[0].chunk_id == "c579"
    store.optimize()
    health = store.health(0)
    assert (health.unindexed_rows, health.segments["vector"]) == (0, 2)
    assert store.count(ChunkFilter()) == 576  # the deleted file's four chunks stay gone
    first = chunks(0, 8)[4]  # f1's: still found, f0's not
    hits = store.vector_search(list(first.vector), 3, ChunkFilter())
    assert hits[0].chunk_id == "c4" and not {"c0", "c1", "c2", "c3"} & {h.chunk_id for h in hits}


def test_a_training_that_cannot_commit_leaves_the_index_and_is_tried_again_later(
    store, monkeypatch, caplog
):
    """Another process compacting the fragments the new index covers moves their rows:
    Lance refuses that commit, the old index keeps serving, and a later optimize trains
    again once RETRY_AFTER has passed."""
    gate = held_training(store, monkeypatch)
    store.upsert(chunks(250, 250))
    store.optimize()
    store.delete(ChunkFilter(file_ids=tuple(f"f{i}" for i in range(20))))  # 80 of 250 rows
    rewritten = store._upkeep._dataset().optimize.compact_files()  # as another process might
    assert rewritten.fragments_removed == 1
    old = store.health(0)
    assert old.training_rows == 500
    with caplog.at_level(logging.WARNING, logger=lance_training.__name__):
        gate.set()
        assert store.wait_for_training(60)
    assert "failed (tried again in" in caplog.text and "conflict" in caplog.text
    # The old index, as it was; the rows written since wait outside it for the next try.
    assert store.health(0) == replace(old, training_rows=0, rows_behind=250)
    store.optimize()
    assert store.health(0).training_rows == 0  # not yet: it waits RETRY_AFTER

    monkeypatch.setattr(lance_training, "RETRY_AFTER", 0.0)
    store._upkeep._training._retry_at = 0.0
    store.optimize()
    assert store.wait_for_training(60)
    health = store.health(0)
    assert (health.trained_rows, health.training_rows) == (420, 0)
    hits = store.vector_search(list(chunks(0, 100)[99].vector), 1, ChunkFilter())
    assert hits[0].chunk_id == "c99"


def test_a_repair_waits_for_the_training_under_way(store, monkeypatch):
    gate = held_training(store, monkeypatch)
    store.upsert(chunks(250, 250))
    store.optimize()
    threading.Timer(0.5, gate.set).start()
    store.rebuild_vector_index()  # waits for the gate, then trains once more itself
    health = store.health(0)
    assert (health.trained_rows, health.training_rows) == (500, 0)


def test_a_repair_whose_training_fails_says_so(store, monkeypatch):
    def fail(dataset: Any, rows: int, name: str, **more: Any) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(store._upkeep, "_build_vectors", fail)
    with pytest.raises(StoreError, match="No space left on device.*Run the repair again"):
        store.rebuild_vector_index()
    assert store.health(0).trained_rows == 250  # the old index serves on


def test_a_big_training_beside_writes_builds_in_a_child_process_at_low_priority(store, monkeypatch):
    """A big background training's build runs in a spawned child at the lowest CPU
    priority, so the searches of the machine's API processes keep their cores; its index
    commits and serves as one built here does. "Big" is made small here."""
    children: list[tuple[int, int]] = []
    build_apart = lance_training.build_apart

    def recorded(uri: str, version: int, options: dict[str, Any]) -> None:
        children.append((version, options["num_partitions"]))
        build_apart(uri, version, options)

    monkeypatch.setattr(lance_training, "APART_FROM_ROWS", 400)
    monkeypatch.setattr(lance_training, "build_apart", recorded)
    grow(store, 250, 250)  # 500 rows: twice those trained on, so a training in the background
    assert store.wait_for_training(120) and store._upkeep.training_failure is None
    health = store.health(recall_samples=5)
    assert len(children) == 1 and health.trained_rows == 500
    assert health.partitions == children[0][1] and (health.recall_at_50 or 0) >= 0.9
    assert len(store.vector_search(chunks(321, 1)[0].vector, 5, ChunkFilter())) == 5
