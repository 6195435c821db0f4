"""Chunk set labels: how KB ids become the labels a search reads, and back."""

from __future__ import annotations

import time

import pytest

from citewell.catalog import Catalog, FileRecord
from citewell.catalog.labels import KbChunkSets, kb_of_label
from citewell.config import Settings
from citewell.db.engine import sqlite_engine
from citewell.ingest.chunk_sets import ChunkSets
from citewell.live_settings import LiveSettings
from citewell.types import ChunkFilter, ScoredChunk, StoredChunk


def test_next_labels_count_up_and_back_to_the_shared_set():
    sets = KbChunkSets("k", "k")
    assert sets.shared and sets.writing == ("k",)
    assert sets.next_label(own=True) == "k~1"
    moved = KbChunkSets("k", "k~1", pending="k~2", retired="k")
    assert moved.writing == ("k~1", "k~2") and not moved.shared
    assert moved.next_label(own=True) == "k~3"
    assert moved.next_label(own=False) == "k"
    assert kb_of_label("k~3") == "k" == kb_of_label("k")


@pytest.fixture
def sets(tmp_path) -> ChunkSets:
    catalog = Catalog(sqlite_engine(tmp_path / "c.sqlite"))
    live = LiveSettings(Settings.load(data_dir=tmp_path))
    return ChunkSets(catalog, live, lambda settings: None)  # type: ignore[arg-type,return-value]


def _record(file_id: str) -> FileRecord:
    return FileRecord(
        file_id, file_id * 2, "t", f"{file_id}.md", "text/markdown", 1, 1, "indexed", time.time()
    )


def _result(kb_ids: tuple[str, ...]) -> ScoredChunk:
    chunk = StoredChunk("c", "f", kb_ids, 0, "t", 0, 1, None, (), "f.md", "t")
    return ScoredChunk("c", 1.0, chunk)


def test_filters_read_the_labels_in_force(sets):
    a = sets.catalog.create_kb("a").id
    b = sets.catalog.create_kb("b").id
    everything = ChunkFilter()
    assert sets.where(everything) is everything  # nobody has own chunking: nothing to do
    sets.labels.begin(b, f"{b}~1", "batch")
    assert sets.where(ChunkFilter(kb_ids=(a, b))).kb_ids == (a, b)  # still the old set
    assert set(sets.where(everything).kb_ids or ()) == {a, b}  # not the set being built
    sets.labels.swap(b)
    assert sets.where(ChunkFilter(kb_ids=(a, b))).kb_ids == (a, f"{b}~1")
    result = _result((a, b, f"{b}~1"))
    sets.visible([result])
    assert result.chunk.kb_ids == (a, b)  # b's stale shared label is not b's any more
    stale = _result((b,))
    sets.visible([stale])
    assert stale.chunk.kb_ids == ()


def test_a_file_searched_by_id_reads_one_set(sets):
    a = sets.catalog.create_kb("a").id
    b = sets.catalog.create_kb("b").id
    sets.catalog.add_file(_record("f1"))
    for kb in (a, b):
        sets.catalog.link(kb, "f1", "f1.md")
    sets.labels.begin(b, f"{b}~1", "batch")
    sets.labels.swap(b)
    where = sets.where(ChunkFilter(kb_ids=(a, b), file_ids=("f1",)))
    assert where.kb_ids == (a,) and where.file_ids == ("f1",)  # the shared set only
    only_b = sets.where(ChunkFilter(kb_ids=(b,), file_ids=("f1",)))
    assert only_b.kb_ids == (f"{b}~1",)
