import pytest

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.lance.store import LanceChunkStore
from citewell.testing.conformance import DIM, ScanConformance

pytestmark = pytest.mark.conformance


class TestLanceChunkStore(ScanConformance):
    @pytest.fixture
    def store(self, tmp_path):
        return LanceChunkStore(tmp_path / "lance", "chunks_test", DIM)


class TestLanceChunkStoreWithAnnIndex(ScanConformance):
    """Same behaviour once the approximate vector index exists."""

    @pytest.fixture
    def store(self, tmp_path):
        return LanceChunkStore(
            tmp_path / "lance", "chunks_test", DIM, VectorIndexPolicy(min_rows=1)
        )


def test_reopening_with_another_dimension_is_refused(tmp_path):
    from citewell.errors import StoreError
    from citewell.testing.conformance import CORPUS

    LanceChunkStore(tmp_path / "lance", "t", DIM).upsert(CORPUS[:1])
    with pytest.raises(StoreError, match="dimensional"):
        LanceChunkStore(tmp_path / "lance", "t", DIM * 2)


def test_data_persists_across_instances(tmp_path):
    from citewell.testing.conformance import ALL, CORPUS

    LanceChunkStore(tmp_path / "lance", "t", DIM).upsert(CORPUS)
    assert LanceChunkStore(tmp_path / "lance", "t", DIM).count(ALL) == len(CORPUS)


def test_drop_removes_the_table(tmp_path):
    from citewell.testing.conformance import ALL, CORPUS

    store = LanceChunkStore(tmp_path / "lance", "t", DIM)
    store.upsert(CORPUS)
    other = LanceChunkStore(tmp_path / "lance", "other", DIM)
    other.upsert(CORPUS[:1])
    store.drop()
    assert LanceChunkStore(tmp_path / "lance", "t", DIM).count(ALL) == 0  # a new, empty table
    assert other.count(ALL) == 1


def test_keyword_search_in_memory_scores_as_lancedb_does(tmp_path):
    """Small tables answer keyword queries from the in-memory snapshot; LanceDB's own
    full-text index answers once the table is large. Both give the same scores."""
    import random

    from citewell.retrieval.tokenize import terms_string
    from citewell.stores.base import optimize_store
    from citewell.testing.conformance import ALL, make_chunk

    rng = random.Random(3)
    words = [
        "parental",
        "leave",
        "weeks",
        "pay",
        "sick",
        "note",
        "doctor",
        "days",
        "lunch",
        "noon",
        "remote",
        "work",
    ]
    chunks = [
        make_chunk(
            f"c{i}", f"f{i % 7}", ("kb1",), " ".join(rng.choices(words, k=rng.randint(1, 40))), i
        )
        for i in range(120)
    ]
    small = LanceChunkStore(tmp_path / "lance", "t", DIM)  # snapshot below 50,000 rows
    small.upsert(chunks)
    optimize_store(small)
    large = LanceChunkStore(tmp_path / "lance", "t", DIM, VectorIndexPolicy(min_rows=1))
    for query in ("leav", "sick note doctor", "remot work week week"):
        terms = terms_string(query)
        memory = small.keyword_search(terms, 20, ALL)
        lance = large.keyword_search(terms, 20, ALL)
        assert [h.score for h in memory] == pytest.approx([h.score for h in lance], rel=1e-5)
        assert {h.chunk_id for h in memory[:5]} == {h.chunk_id for h in lance[:5]} or (
            memory[4].score == pytest.approx(memory[5].score)  # a tie at the cut
        )


def _kb_store(tmp_path):
    """A table searched in LanceDB (above min_rows): kb1 holds c1, c2, c4; kb2 c3, c4; kb3 c5."""
    from citewell.stores.base import optimize_store
    from citewell.testing.conformance import CORPUS

    store = LanceChunkStore(tmp_path / "lance", "t", DIM, VectorIndexPolicy(min_rows=1))
    store.upsert(CORPUS)
    optimize_store(store)
    return store


def test_a_filter_keeping_every_row_searches_without_it_and_checks_the_rows(tmp_path):
    """Searching every KB (a reader of all of them) skips LanceDB's filter, for the same
    results: each row found is checked against the filter."""
    from citewell.testing.conformance import unit
    from citewell.types import ChunkFilter

    store = _kb_store(tmp_path)
    unfiltered = []
    search_unfiltered = store._unfiltered
    store._unfiltered = lambda *a: unfiltered.append(a[2]) or search_unfiltered(*a)
    every_kb = ChunkFilter(kb_ids=("kb1", "kb2", "kb3"))
    vector = [h.chunk_id for h in store.vector_search(unit(2), 5, every_kb)]
    keyword = [h.chunk_id for h in store.keyword_search("leav", 5, every_kb)]
    assert len(unfiltered) == 2
    assert vector[0] == "c3" and sorted(vector) == ["c1", "c2", "c3", "c4", "c5"]
    assert sorted(keyword) == ["c1", "c2"]
    store.vector_search(unit(2), 5, ChunkFilter(kb_ids=("kb1",)))  # keeps some rows only
    store.vector_search(unit(2), 5, ChunkFilter(kb_ids=every_kb.kb_ids, file_ids=("f2",)))
    assert len(unfiltered) == 2


def test_a_stale_count_never_lets_another_kbs_rows_through(tmp_path):
    """Counts are remembered for a while and miss other processes' writes: when the count
    says a KB holds every row but rows of another KB come back, the filtered search runs."""
    from citewell.testing.conformance import unit
    from citewell.types import ChunkFilter

    store = _kb_store(tmp_path)
    store._counts._count = lambda predicate: 5  # as if kb1 were still the whole table
    store._counts.forget()
    only_kb1 = ChunkFilter(kb_ids=("kb1",))
    assert store._keeps_all(only_kb1)
    vector = [h.chunk_id for h in store.vector_search(unit(2), 5, only_kb1)]
    keyword = [h.chunk_id for h in store.keyword_search("lunch noon leav", 5, only_kb1)]
    assert sorted(vector) == ["c1", "c2", "c4"]
    assert sorted(keyword) == ["c1", "c2"]


def test_a_count_found_stale_is_counted_again(tmp_path):
    """One search that finds the count stale recounts, instead of searching twice on every
    search until the remembered count expires."""
    from citewell.testing.conformance import unit
    from citewell.types import ChunkFilter

    store = _kb_store(tmp_path)
    counted = []
    store._counts._count = lambda predicate: counted.append(predicate) or 5
    store._counts.forget()
    store.vector_search(unit(2), 5, ChunkFilter(kb_ids=("kb1",)))
    first = len(counted)
    store.vector_search(unit(2), 5, ChunkFilter(kb_ids=("kb1",)))
    assert first == 2 and len(counted) == 4  # each stale search counts both keys afresh


def test_keyword_scores_of_a_filter_that_kept_every_row_follow_other_processes_writes(
    tmp_path,
):
    """Another process deletes a row of the filter's and adds one outside it (as many rows
    as before): the filter is now a part of the table, scored with its own statistics,
    never with those of rows its caller may not read."""
    import time

    from citewell.retrieval.tokenize import terms_string
    from citewell.testing.conformance import make_chunk
    from citewell.types import ChunkFilter

    store = _kb_store(tmp_path)
    every_kb = ChunkFilter(kb_ids=("kb1", "kb2", "kb3"))
    leave = terms_string("leave")
    assert store._keeps_every_row(every_kb)
    store.keyword_search(leave, 5, every_kb)
    other = LanceChunkStore(tmp_path / "lance", "t", DIM, VectorIndexPolicy(min_rows=1))
    other.upsert([make_chunk("p1", "fp", ("kb9",), "Another tenant's leave leave leave.", 5)])
    other.delete(ChunkFilter(file_ids=("f2",)))
    time.sleep(1.2)  # other processes' writes are read within a second
    assert not store._keeps_every_row(every_kb)
    fresh = LanceChunkStore(tmp_path / "lance", "t", DIM, VectorIndexPolicy(min_rows=1))
    mine, theirs = (
        store.keyword_search(leave, 5, every_kb),
        fresh.keyword_search(leave, 5, every_kb),
    )
    assert [(h.chunk_id, h.score) for h in mine] == [(h.chunk_id, h.score) for h in theirs]
