"""Conformance suites: every implementation of a role passes the same tests, unchanged.

Use by subclassing in a test module and providing a ``store`` fixture (a fresh, empty store
with ``dimension`` == 8). Plain pytest classes: no plugin needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import numpy as np
import pytest

from citewell.errors import StoreError
from citewell.retrieval.tokenize import terms_string
from citewell.stores.base import (
    ChunkStore,
    FileChunks,
    capabilities,
    chunks_per_file,
    optimize_store,
    report,
    scanning,
    upsert_matrix,
)
from citewell.stores.columns import ChunkColumns, upsert_columns
from citewell.types import ChunkFilter, StoredChunk

T = TypeVar("T")

DIM = 8
ALL = ChunkFilter()


def found_within(find: Callable[[], T | None], what: str, seconds: float = 10.0) -> T:
    """The first answer of ``find()`` that is not None, asked every 20 ms for ``seconds``
    (what a store makes in the background: a copy, a snapshot)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = find()
        if found is not None:
            return found
        time.sleep(0.02)
    raise AssertionError(f"no {what} within {seconds:g} s")


def unit(i: int) -> tuple[float, ...]:
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    v[(i + 1) % DIM] = 0.1
    return tuple(float(x) for x in v / np.linalg.norm(v))


def make_chunk(
    cid: str, file_id: str, kbs: tuple[str, ...], text: str, axis: int, index: int = 0
) -> StoredChunk:
    return StoredChunk(
        id=cid,
        file_id=file_id,
        kb_ids=kbs,
        index=index,
        text=text,
        start=0,
        end=len(text),
        page=index + 1,
        headings=("Guide", "Leave"),
        file_name=f"{file_id}.md",
        terms=terms_string(text),
        vector=unit(axis),
    )


CORPUS = [
    make_chunk("c1", "f1", ("kb1",), "Parental leave lasts sixteen weeks at full pay.", 0),
    make_chunk("c2", "f1", ("kb1",), "Sick leave needs a doctor's note after three days.", 1, 1),
    make_chunk("c3", "f2", ("kb2",), "The cafeteria serves lunch from noon.", 2),
    make_chunk("c4", "f3", ("kb1", "kb2"), "Remote work is allowed two days a week.", 3),
    make_chunk("c5", "f4", ("kb3",), "北京大学的图书馆很大", 4),
]


class ChunkStoreConformance:
    """The behaviour every ChunkStore backend must show."""

    @pytest.fixture
    def filled(self, store: ChunkStore) -> ChunkStore:
        assert store.upsert(CORPUS) == len(CORPUS)
        optimize_store(store)
        return store

    def test_count_and_get(self, filled: ChunkStore) -> None:
        assert filled.count(ALL) == 5
        got = filled.get(["c4", "missing", "c1"])
        assert [c.id for c in got] == ["c4", "c1"]
        assert got[0].kb_ids == ("kb1", "kb2")
        assert got[1].headings == ("Guide", "Leave") and got[1].page == 1

    def test_upsert_replaces_by_id(self, filled: ChunkStore) -> None:
        changed = make_chunk("c1", "f1", ("kb1",), "Parental leave lasts twenty weeks.", 0)
        filled.upsert([changed])
        assert filled.count(ALL) == 5
        assert filled.get(["c1"])[0].text == "Parental leave lasts twenty weeks."

    def test_vectors_as_one_matrix_are_stored_as_upserted_ones(self, store: ChunkStore) -> None:
        """An import hands its vectors over as one float32 matrix; the chunks read, search
        and replace by id as if upserted one by one."""
        bare = [replace(c, vector=None) for c in CORPUS]
        matrix = np.asarray([c.vector for c in CORPUS], dtype=np.float32)
        assert upsert_matrix(store, bare, matrix) == len(CORPUS)
        optimize_store(store)
        assert store.count(ALL) == 5
        assert store.vector_search(unit(1), 1, ALL)[0].chunk_id == "c2"
        changed = replace(bare[0], text="Parental leave lasts twenty weeks.")
        upsert_matrix(store, [changed, replace(bare[4], id="c6", file_id="f9")], matrix[[0, 4]])
        assert store.count(ALL) == 6
        assert store.get(["c1"])[0].text == "Parental leave lasts twenty weeks."
        assert store.vector_search(unit(4), 2, ALL)[1].score == pytest.approx(1.0, abs=1e-4)
        with pytest.raises(StoreError):
            upsert_matrix(store, bare[:2], matrix[:1])

    def test_chunks_as_columns_are_stored_as_upserted_ones(self, store: ChunkStore) -> None:
        """An import hands its chunks over as columns (``upsert_columns`` where the store
        has it, else as chunks); the last row of an id given twice is the one kept."""
        columns = ChunkColumns.of([*CORPUS, replace(CORPUS[0], text="Leave: twenty weeks.")])
        matrix = np.asarray([c.vector for c in [*CORPUS, CORPUS[0]]], dtype=np.float32)
        assert upsert_columns(store, columns, matrix) == len(CORPUS) + 1
        optimize_store(store)
        assert store.count(ALL) == 5
        assert store.get(["c1"])[0].text == "Leave: twenty weeks."
        assert store.get(["c3"])[0].text == CORPUS[2].text
        assert store.vector_search(unit(1), 1, ALL)[0].chunk_id == "c2"
        with pytest.raises(StoreError):
            upsert_columns(store, columns, matrix[:2])

    def test_vector_search_orders_by_similarity(self, filled: ChunkStore) -> None:
        hits = filled.vector_search(unit(1), 3, ALL)
        assert hits[0].chunk_id == "c2"
        assert hits[0].score == pytest.approx(1.0, abs=1e-4)
        assert [h.rank for h in hits] == [0, 1, 2]
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))

    def test_keyword_search_is_bm25_on_terms(self, filled: ChunkStore) -> None:
        hits = filled.keyword_search(terms_string("LEAVE"), 10, ALL)
        assert {h.chunk_id for h in hits} == {"c1", "c2"}
        assert filled.keyword_search(terms_string("weeks parental"), 10, ALL)[0].chunk_id == "c1"

    def test_keyword_scores_come_from_the_searched_kbs_alone(self, store: ChunkStore) -> None:
        """N, df and lengths are the filter's rows': another tenant's KB holding a word
        changes no score in mine, so a score cannot tell whether anyone else stores it."""
        mine = ChunkFilter(kb_ids=("mine",))
        store.upsert(
            [
                make_chunk("m1", "fm", ("mine",), "Probe word alpha stays here.", 0),
                make_chunk("m2", "fm", ("mine",), "Zanzibar probe beta.", 1, 1),
                make_chunk("m3", "fm", ("mine",), "Quokka probe gamma.", 2, 2),
            ]
        )
        optimize_store(store)
        alone = {h.chunk_id: h.score for h in store.keyword_search("zanzibar quokka", 10, mine)}
        theirs = "Zanzibar zanzibar merger plans for the pond, nine million euros."
        store.upsert([make_chunk(f"o{i}", "fo", ("theirs",), theirs, 3, i) for i in range(40)])
        optimize_store(store)
        shared = {h.chunk_id: h.score for h in store.keyword_search("zanzibar quokka", 10, mine)}
        assert set(alone) == {"m2", "m3"}
        assert shared == pytest.approx(alone, rel=1e-4)
        assert shared["m2"] == pytest.approx(shared["m3"], rel=1e-4)  # held by others or not

    def test_keyword_search_cjk(self, filled: ChunkStore) -> None:
        hits = filled.keyword_search(terms_string("北京的大学"), 10, ALL)
        assert [h.chunk_id for h in hits] == ["c5"]

    def test_filters_apply_inside_both_searches(self, filled: ChunkStore) -> None:
        only_kb2 = ChunkFilter(kb_ids=("kb2",))
        assert {h.chunk_id for h in filled.vector_search(unit(0), 10, only_kb2)} == {"c3", "c4"}
        assert filled.keyword_search(terms_string("leave"), 10, only_kb2) == []
        by_file = ChunkFilter(file_ids=("f1",))
        assert {h.chunk_id for h in filled.vector_search(unit(3), 10, by_file)} == {"c1", "c2"}
        assert filled.vector_search(unit(0), 10, ChunkFilter(kb_ids=())) == []

    def test_several_kbs_return_each_chunk_once(self, filled: ChunkStore) -> None:
        hits = filled.vector_search(unit(3), 10, ChunkFilter(kb_ids=("kb1", "kb2")))
        ids = [h.chunk_id for h in hits]
        assert sorted(ids) == ["c1", "c2", "c3", "c4"] and len(ids) == len(set(ids))

    def test_link_and_unlink(self, filled: ChunkStore) -> None:
        filled.link_files(["f2"], "kb1")
        filled.link_files(["f2"], "kb1")  # idempotent
        assert filled.get(["c3"])[0].kb_ids == ("kb2", "kb1")
        assert filled.count(ChunkFilter(kb_ids=("kb1",))) == 4
        filled.unlink("f2", "kb2")
        assert filled.get(["c3"])[0].kb_ids == ("kb1",)
        assert filled.count(ChunkFilter(kb_ids=("kb2",))) == 1

    def test_link_within_one_chunk_set(self, store: ChunkStore) -> None:
        """A file with two chunk sets (two chunkings): a link joins only the one named."""
        store.upsert(
            [
                make_chunk("s1", "f1", ("kb1",), "Shared set chunk one.", 0),
                make_chunk("s2", "f1", ("kb1",), "Shared set chunk two.", 1, 1),
                make_chunk("o1", "f1", ("kb2~1",), "Own set of kb2.", 2),
            ]
        )
        store.link_files(["f1"], "kb3", within="kb1")
        assert [c.kb_ids for c in store.get(["s1", "s2", "o1"])] == [
            ("kb1", "kb3"),
            ("kb1", "kb3"),
            ("kb2~1",),
        ]

    def test_unlink_deletes_what_is_left_in_no_kb(self, filled: ChunkStore) -> None:
        filled.unlink("f1", "kb1")
        assert filled.get(["c1", "c2"]) == []
        assert filled.count(ALL) == 3
        assert filled.keyword_search(terms_string("leave"), 10, ALL) == []
        assert "f1" not in filled.file_ids()
        filled.unlink("f3", "kb1")  # still in kb2: kept
        assert filled.get(["c4"])[0].kb_ids == ("kb2",)

    def test_delete_by_filter_removes_from_every_index(self, filled: ChunkStore) -> None:
        assert filled.delete(ChunkFilter(file_ids=("f1",))) == 2
        assert filled.count(ALL) == 3
        assert filled.keyword_search(terms_string("leave"), 10, ALL) == []
        assert "c1" not in {h.chunk_id for h in filled.vector_search(unit(0), 10, ALL)}
        assert filled.file_ids() == {"f2", "f3", "f4"}
        counts = chunks_per_file(filled)
        assert set(counts) == {"f2", "f3", "f4"} and sum(counts.values()) == filled.count(ALL)

    def test_delete_without_filter_is_refused(self, filled: ChunkStore) -> None:
        from citewell.errors import StoreError

        with pytest.raises(StoreError):
            filled.delete(ALL)
        assert filled.count(ALL) == 5

    def test_quotes_in_ids_are_data_not_sql(self, filled: ChunkStore) -> None:
        assert filled.count(ChunkFilter(kb_ids=("kb1') OR true OR ('x",))) == 0
        assert filled.delete(ChunkFilter(file_ids=("f1' OR '1'='1",))) == 0
        assert filled.count(ALL) == 5

    def test_empty_store_searches_return_nothing(self, store: ChunkStore) -> None:
        assert store.vector_search(unit(0), 5, ALL) == []
        assert store.keyword_search("leav", 5, ALL) == []
        assert store.count(ALL) == 0

    def test_it_says_what_it_can_do_and_how_it_is(self, filled: ChunkStore) -> None:
        can = capabilities(filled)
        now = report(filled)
        assert now.capabilities == can
        assert (now.index is not None) == can.reports_index_health
        assert (now.kb_copies is not None) == can.keeps_kb_copies
        assert (now.table_copy is not None) == can.keeps_table_copy
        if now.index is not None:
            assert now.index.rows == filled.count(ChunkFilter())


class ScanConformance(ChunkStoreConformance):
    """ChunkStoreConformance, plus the optional ScansChunks capability."""

    def test_scan_returns_whole_chunks_in_file_order(self, filled: ChunkStore) -> None:
        scanner = scanning(filled)
        chunks = scanner.scan(ChunkFilter(file_ids=("f2", "f1")))
        assert [c.id for c in chunks] == ["c1", "c2", "c3"]
        assert chunks[0] == replace(CORPUS[0], vector=None)  # terms and headings included
        assert [c.id for c in scanner.scan(ChunkFilter(kb_ids=("kb3",)))] == ["c5"]
        assert len(scanner.scan(ALL)) == len(CORPUS)

    def test_manifest_lists_each_files_chunks_and_kbs(self, filled: ChunkStore) -> None:
        filled.link_files(["f1"], "kb9")
        manifest = scanning(filled).manifest()
        assert manifest["f1"] == FileChunks(frozenset({"c1", "c2"}), frozenset({"kb1", "kb9"}))
        assert manifest["f3"] == FileChunks(frozenset({"c4"}), frozenset({"kb1", "kb2"}))
        assert set(manifest) == {"f1", "f2", "f3", "f4"}

    def test_empty_store_scans_nothing(self, store: ChunkStore) -> None:
        assert scanning(store).scan(ALL) == [] and scanning(store).manifest() == {}
