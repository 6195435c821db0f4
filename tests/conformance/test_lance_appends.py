"""Writes into a LanceDB table that skip the look-up of their files (stores/lance/writes.py,
``AbsentFiles``): only while every version since the table was empty, or since its file ids
were scanned, is this store's own write; another process's write makes the next one ask the
table again."""

from __future__ import annotations

import pytest

from citewell.stores.lance import store as lance_store
from citewell.stores.lance.store import LanceChunkStore
from citewell.types import ChunkFilter, StoredChunk

pytestmark = pytest.mark.conformance

DIM = 4


def chunks(file_id: str, text: str = "text", count: int = 2) -> list[StoredChunk]:
    return [
        StoredChunk(id=f"{file_id}-{n}", file_id=file_id, kb_ids=("kb",), index=n,
                    text=f"{text} {n}", start=0, end=6, page=None, headings=(),
                    file_name=f"{file_id}.md", terms=f"{text} {n}", vector=[1.0, 0.0, 0.0, n])
        for n in range(count)
    ]  # fmt: skip


@pytest.fixture
def look_ups(monkeypatch) -> list[str]:
    """The filtered counts the tables were asked for (the look-up of a write's files)."""
    import lancedb.table

    asked: list[str] = []
    count_rows = lancedb.table.LanceTable.count_rows

    def spied(self, filter=None):  # type: ignore[no-untyped-def]
        if filter and filter.startswith("file_id IN"):
            asked.append(filter)
        return count_rows(self, filter)

    monkeypatch.setattr(lancedb.table.LanceTable, "count_rows", spied)
    return asked


def test_appends_into_a_new_table_look_no_file_up(tmp_path, look_ups, monkeypatch):
    monkeypatch.setattr(lance_store, "FOLD_KEYS_AFTER_ROWS", 3)  # upkeep between writes
    store = LanceChunkStore(tmp_path / "lance", "t", DIM)
    for file_id in ("a", "b", "c", "d"):
        store.upsert(chunks(file_id))
    assert look_ups == []
    assert store.count(ChunkFilter()) == 8
    store.upsert(chunks("b", "changed"))  # a file written before: merged, not appended
    assert store.count(ChunkFilter()) == 8
    assert {c.text for c in store.scan(ChunkFilter(file_ids=["b"]))} == {"changed 0", "changed 1"}


def test_the_stores_own_deletes_and_links_keep_what_it_knows(tmp_path, look_ups):
    """A delete, a link and an unlink add no file's rows: the next write looks nothing up,
    and a file written again after its delete is merged by id, never doubled."""
    store = LanceChunkStore(tmp_path / "lance", "t", DIM)
    store.upsert(chunks("a") + chunks("b"))
    store.delete(ChunkFilter(file_ids=["a"]))
    store.link_files(["b"], "other")
    store.unlink("b", "other")
    store.upsert(chunks("c"))
    store.upsert(chunks("a", "back"))
    assert look_ups == []
    assert store.count(ChunkFilter()) == 6
    assert sorted(c.text for c in store.scan(ChunkFilter(file_ids=["a"]))) == ["back 0", "back 1"]
    store.delete(ChunkFilter(file_ids=["a", "b", "c"]))  # empty again: nothing to look up
    store.upsert(chunks("d"))
    assert look_ups == [] and store.count(ChunkFilter()) == 2


def test_a_store_that_did_not_see_the_table_empty_scans_once_look_ups_cost_as_much(
    tmp_path, look_ups
):
    """A store opened on a table that has rows (a process started since, a second import)
    looks its first write's files up, then scans the table's file ids once its look-ups
    took as long as that scan would: its later writes look nothing up."""
    LanceChunkStore(tmp_path / "lance", "t", DIM).upsert(chunks("a") + chunks("b"))
    store = LanceChunkStore(tmp_path / "lance", "t", DIM)
    store.upsert(chunks("c"))
    assert len(look_ups) == 1  # a look-up of four rows' table: cheaper than a scan so far
    store.upsert(chunks("d"))  # by now the look-up took longer than a scan of 6 rows
    store.upsert(chunks("e"))
    store.upsert(chunks("b", "again"))  # held since before this store: merged
    assert len(look_ups) == 1
    assert store.count(ChunkFilter()) == 10
    assert sorted(c.text for c in store.scan(ChunkFilter(file_ids=["b"]))) == ["again 0", "again 1"]


def test_another_process_write_is_seen_and_not_doubled(tmp_path, look_ups):
    """Another store on the same table (as another process's) writes a file this one has
    not: this one asks the table again, and merges that file's rows instead of adding
    them twice."""
    mine = LanceChunkStore(tmp_path / "lance", "t", DIM)
    mine.upsert(chunks("a"))
    theirs = LanceChunkStore(tmp_path / "lance", "t", DIM)
    theirs.upsert(chunks("c"))
    mine.upsert(chunks("c", "again"))
    assert look_ups and "'c'" in look_ups[-1]
    assert mine.count(ChunkFilter()) == 4
    rows = mine.scan(ChunkFilter(file_ids=["c"]))
    assert sorted(c.text for c in rows) == ["again 0", "again 1"]
