"""PostgresChunkStore on a real PostgreSQL 18 + pgvector (citewell/testing/postgres.py)."""

import time
from dataclasses import replace

import numpy as np
import psycopg
import pytest
from sqlalchemy import event, text

from citewell.db.engine import url_engine
from citewell.retrieval.tokenize import terms_string
from citewell.stores.base import upsert_matrix
from citewell.stores.memory.changes import ChangedCopy
from citewell.stores.memory.keeper import SnapshotKeeper
from citewell.stores.postgres.sql import parse_vector, vector_literal
from citewell.stores.postgres.store import PostgresChunkStore
from citewell.testing.conformance import ALL, CORPUS, DIM, ScanConformance, make_chunk, unit
from citewell.types import ChunkFilter

pytestmark = pytest.mark.conformance


@pytest.fixture
def engine(postgres):
    engine = url_engine(postgres.create_database())
    yield engine
    engine.dispose()


class TestPostgresChunkStore(ScanConformance):
    @pytest.fixture
    def store(self, engine):
        return PostgresChunkStore(engine, "chunks_test", DIM)


class WaitingKeeper(SnapshotKeeper):
    """Waits for the background build instead of sending the search to SQL meanwhile, so
    every search of the conformance suite is answered from the snapshot."""

    def current(self, wait=True):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            snapshot = super().current(wait)
            if snapshot is not None or not self._building:
                return snapshot
            time.sleep(0.002)
        raise AssertionError("the snapshot was not built in 10 s")


def in_memory(engine, table: str) -> PostgresChunkStore:
    store = PostgresChunkStore(engine, table, DIM, memory_rows=50_000)
    store._snapshots = WaitingKeeper(store._snapshots._source, 50_000, check_interval=0.0)
    return store


class TestPostgresChunkStoreInMemory(ScanConformance):
    """The same behaviour with searches and reads answered from the in-memory snapshot."""

    @pytest.fixture
    def store(self, engine):
        return in_memory(engine, "chunks_test")


def test_small_tables_are_searched_in_memory_with_the_same_results(engine):
    from citewell.retrieval.tokenize import terms_string

    memory, sql = in_memory(engine, "t"), PostgresChunkStore(engine, "t", DIM)
    memory.upsert(CORPUS)
    assert memory._snapshots.current() is not None
    kb = ALL.__class__(kb_ids=(CORPUS[0].kb_ids[0],))
    for where in (ALL, kb):
        for query in ("leave", "sick leave leave weeks", "remote work days", "北京 图书馆"):
            terms = terms_string(query)
            ours = [(h.chunk_id, round(h.score, 4)) for h in memory.keyword_search(terms, 5, where)]
            theirs = [(h.chunk_id, round(h.score, 4)) for h in sql.keyword_search(terms, 5, where)]
            assert ours == theirs, query
        for chunk in CORPUS[:4]:  # unit vectors: the nearest is exact, the rest tie at 0
            ours, theirs = (
                memory.vector_search(chunk.vector, 3, where),
                sql.vector_search(chunk.vector, 3, where),
            )
            assert ours[0].chunk_id == theirs[0].chunk_id
            assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=1e-6)
    assert memory.get([CORPUS[1].id]) == sql.get([CORPUS[1].id])


def test_a_write_of_this_process_is_seen_by_the_next_search(engine):
    """Each API process keeps its own snapshot; its own writes retire it at once."""
    reader, writer = in_memory(engine, "t"), PostgresChunkStore(engine, "t", DIM)
    writer.upsert(CORPUS)
    first = CORPUS[0]
    assert reader.vector_search(first.vector, 1, ALL)[0].chunk_id == first.id
    writer.delete(ALL.__class__(file_ids=(first.file_id,)))
    assert first.id not in {h.chunk_id for h in reader.vector_search(first.vector, 3, ALL)}
    assert reader.get([first.id]) == []
    writer.unlink(CORPUS[1].file_id, CORPUS[1].kb_ids[0])
    kb = ALL.__class__(kb_ids=(CORPUS[1].kb_ids[0],))
    assert CORPUS[1].id not in {h.chunk_id for h in reader.vector_search(CORPUS[1].vector, 3, kb)}


def test_statistics_made_before_versions_get_one(engine):
    from sqlalchemy import text

    PostgresChunkStore(engine, "old", DIM).upsert(CORPUS)
    with engine.begin() as db:  # as the first release left it: no column, no schema version
        db.execute(text("ALTER TABLE old_stats DROP COLUMN version"))
        db.execute(text("DELETE FROM citewell_chunk_tables WHERE name = 'old'"))
    store = in_memory(engine, "old")
    assert _read(engine, "SELECT version FROM old_stats") == [(0,)]
    recorded = "SELECT version FROM citewell_chunk_tables WHERE name = 'old'"
    assert _read(engine, recorded)[0][0] >= 4  # upgraded, then versioned
    assert store.count(ALL) == len(CORPUS)
    assert store._snapshots.current() is not None


def test_reopening_with_another_dimension_is_refused(engine):
    from citewell.errors import StoreError

    PostgresChunkStore(engine, "t", DIM).upsert(CORPUS[:1])
    with pytest.raises(StoreError, match="dimensional"):
        PostgresChunkStore(engine, "t", DIM * 2)


def test_drop_removes_the_tables(engine):
    store = PostgresChunkStore(engine, "t", DIM)
    store.upsert(CORPUS)
    other = PostgresChunkStore(engine, "other", DIM)
    other.upsert(CORPUS[:1])
    store.drop()
    assert PostgresChunkStore(engine, "t", DIM).count(ALL) == 0
    assert other.count(ALL) == 1


def test_bm25_scores_match_the_embedded_store(engine, tmp_path):
    """Same chunks, same BM25 definition: the same scores as LanceDB's full-text index."""
    from citewell.retrieval.tokenize import terms_string
    from citewell.stores.lance.store import LanceChunkStore

    pg = PostgresChunkStore(engine, "t", DIM)
    lance = LanceChunkStore(tmp_path / "lance", "t", DIM)
    for store in (pg, lance):
        store.upsert(CORPUS)
        store.optimize()
    for query in ("leave", "sick leave leave weeks", "remote work days", "北京 图书馆"):
        terms = terms_string(query)
        ours = [(h.chunk_id, round(h.score, 4)) for h in pg.keyword_search(terms, 5, ALL)]
        theirs = [(h.chunk_id, round(h.score, 4)) for h in lance.keyword_search(terms, 5, ALL)]
        assert ours == theirs, query


def test_health_reports_rows_and_measured_recall(engine):
    from citewell.stores.base import ReportsIndexHealth

    store = PostgresChunkStore(engine, "t", DIM)
    store.upsert(CORPUS)
    assert isinstance(store, ReportsIndexHealth)
    health = store.health(recall_samples=5)
    assert health.rows == len(CORPUS) and health.recall_samples == 5
    assert health.recall_at_50 == 1.0  # five chunks: the index finds them all
    store.rebuild_vector_index()
    assert store.vector_search(CORPUS[2].vector, 1, ALL)[0].chunk_id == "c3"


def test_recall_check_reads_the_exact_neighbours_in_one_pass(engine, monkeypatch):
    """The recall check's exact top k, from one pass over the table in batches (made small
    here, so that the best rows carried between batches count), is the top k of an exact
    SQL search; its queries are distinct stored rows from across the table's pages."""
    from citewell.stores.postgres import health, snapshot

    monkeypatch.setattr(snapshot, "LOAD_BATCH", 37)
    rng = np.random.default_rng(11)
    matrix = rng.standard_normal((600, DIM)).astype(np.float32)
    matrix[5] = 0  # a zero vector must not spoil the pass
    store = PostgresChunkStore(engine, "recall", DIM)
    chunks = [make_chunk(f"r{n}", f"f{n // 10}", ("kb1",), f"Row {n}.", 0) for n in range(600)]
    upsert_matrix(store, [replace(c, vector=None) for c in chunks], matrix)
    with engine.begin() as db:
        queries = health.sampled_vectors(db, "recall", 8)
        pages = db.execute(text("SELECT pg_relation_size('recall') / 8192")).scalar_one()
    assert pages > 8 and len({tuple(q) for q in queries}) == len(queries) == 8
    batches, matrix = store._source.column_batches, np.array(queries, dtype=np.float32)
    found = health.exact_neighbours(engine, batches, matrix, k=7)
    for query, exact in zip(queries, found, strict=True):
        with engine.connect() as db:
            scores = db.execute(
                text("SELECT id, vector <=> CAST(:q AS vector) FROM recall ORDER BY 2 LIMIT 8"),
                {"q": vector_literal(query)},
            ).all()
        assert exact == {i for i, _ in scores[:7]} and scores[6][1] < scores[7][1]
    assert store.health(recall_samples=8).recall_samples == 8


def test_concurrent_writers_of_the_same_chunks_take_turns(engine):
    """Two processes (here: threads with their own connections) ingesting the same file:
    every write succeeds, and the table ends with one row each and its terms counted once."""
    from concurrent.futures import ThreadPoolExecutor

    from sqlalchemy import text

    store = PostgresChunkStore(engine, "t", DIM)
    store.upsert(CORPUS[:1])
    with ThreadPoolExecutor(4) as pool:
        written = list(pool.map(lambda _: store.upsert(CORPUS), range(12)))
    assert written == [len(CORPUS)] * 12
    assert store.count(ALL) == len(CORPUS)
    with engine.connect() as db:
        chunks, _length = db.execute(text("SELECT chunks, length FROM t_stats")).one()
    assert chunks == len(CORPUS)
    _df_matches_rows(engine, "t")


def _df_matches_rows(engine, table: str) -> None:
    """The document frequencies kept by the writes are those counted in the rows."""
    from collections import Counter

    from sqlalchemy import text

    with engine.connect() as db:
        kept = dict(db.execute(text(f"SELECT term, df FROM {table}_df WHERE df > 0")).all())
        rows = db.execute(text(f"SELECT terms FROM {table}")).scalars()
        counted = Counter(term for terms in rows for term in set(terms.split()))
    assert kept == dict(counted)


def test_document_frequencies_follow_every_write(engine):
    from dataclasses import replace

    from citewell.types import ChunkFilter

    store = PostgresChunkStore(engine, "t", DIM)
    store.upsert(CORPUS)
    store.upsert([replace(CORPUS[0], terms="leav leav polici")])  # the same id, new terms
    store.delete(ChunkFilter(file_ids=(CORPUS[1].file_id,)))
    _df_matches_rows(engine, "t")
    store.unlink(CORPUS[2].file_id, CORPUS[2].kb_ids[0])
    _df_matches_rows(engine, "t")


def _relations(engine, prefix: str) -> set[str]:
    found = _read(engine, f"SELECT relname FROM pg_class WHERE relname LIKE '{prefix}%'")
    return {name for (name,) in found}


def test_postings_tables_of_earlier_releases_make_way_for_the_keyword_index(engine):
    """Tables made by the first PostgreSQL release of the store (postings without impacts,
    no df table, no version) and by the releases since (postings with impacts, version 5):
    opened, their postings table is dropped, the GIN index is built, the document
    frequencies are counted from the rows, and searches answer as on a new table."""
    from sqlalchemy import text

    from citewell.retrieval.tokenize import terms_string

    new = PostgresChunkStore(engine, "fresh", DIM)
    new.upsert(CORPUS)
    assert "fresh_postings" not in _relations(engine, "fresh")
    assert "fresh_terms" in _relations(engine, "fresh")
    with engine.begin() as db:
        for old, version in (("old", None), ("five", 5)):
            db.execute(text(f"CREATE TABLE {old} (LIKE fresh INCLUDING DEFAULTS)"))
            db.execute(text(f"ALTER TABLE {old} ADD PRIMARY KEY (id)"))
            db.execute(text(f"INSERT INTO {old} SELECT * FROM fresh"))
            db.execute(text(f"CREATE TABLE {old}_stats (LIKE fresh_stats INCLUDING ALL)"))
            db.execute(text(f"INSERT INTO {old}_stats SELECT * FROM fresh_stats"))
            db.execute(
                text(
                    f"CREATE TABLE {old}_postings (term text NOT NULL, chunk_id text NOT NULL "
                    f"REFERENCES {old} (id) ON DELETE CASCADE, tf integer NOT NULL, length "
                    "integer NOT NULL, PRIMARY KEY (term, chunk_id) INCLUDE (tf, length))"
                )
            )
            if version is not None:  # as releases 4-5 left it: a df table, a version row
                db.execute(text(f"CREATE TABLE {old}_df AS SELECT * FROM fresh_df"))
                db.execute(text(f"CREATE TABLE {old}_changes (LIKE fresh_changes)"))
                db.execute(
                    text("INSERT INTO citewell_chunk_tables (name, version) VALUES (:t, :v)"),
                    {"t": old, "v": version},
                )
    for old in ("old", "five"):
        store = PostgresChunkStore(engine, old, DIM)
        assert f"{old}_postings" not in _relations(engine, old)
        assert f"{old}_terms" in _relations(engine, old)
        _df_matches_rows(engine, old)
        for query in ("leave", "sick leave leave weeks", "北京 图书馆"):
            terms = terms_string(query)
            assert store.keyword_search(terms, 5, ALL) == new.keyword_search(terms, 5, ALL)
        store.delete(ALL.__class__(file_ids=(CORPUS[0].file_id,)))
        _df_matches_rows(engine, old)


def test_keyword_search_scores_only_rows_of_the_rarest_terms_within_its_budget(engine):
    """With a budget of rows to score, a search takes the rarest query terms whose rows fit
    it; the best rows hold a rare term, so they are found. When no term fits, rows with the
    two rarest are scored. With room for every row the result is the exhaustive BM25."""
    from dataclasses import replace

    import numpy as np

    from citewell.stores.memory.scope_statistics import ScopeStatistics
    from citewell.stores.postgres.bm25 import Candidates, choose_candidates

    assert choose_candidates({"a": 5, "b": 50, "c": 500}, 60) == Candidates(["a", "b"], "&&")
    assert choose_candidates({"a": 5, "b": 50}, 4) == Candidates(["a", "b"], "@>")
    assert choose_candidates({"a": 90, "b": 50}, 4, every=True) == Candidates(["b", "a"], "&&")
    rng = np.random.default_rng(5)
    rows = []
    for i in range(300):
        words = ["common"] * int(rng.integers(1, 4)) + ["filler"] * int(rng.integers(0, 8))
        words += ["rare"] if i % 30 == 0 else []
        words += ["middl"] if i % 3 == 0 else []
        row = make_chunk(f"r{i:03d}", f"f{i}", ("kb",), " ".join(words), i)
        rows.append(replace(row, terms=" ".join(words)))  # the terms as written, unstemmed
    store = PostgresChunkStore(engine, "budget", DIM)
    store.upsert(rows)
    scope = ScopeStatistics.of(pa_terms(rows))
    exhaustive = [c for c, _ in scope.rank(["rare", "common"], [(r.id, r.terms) for r in rows], 5)]
    assert [h.chunk_id for h in store.keyword_search("rare common", 5, ALL)] == exhaustive
    store.bm25.budget = 20  # rare (10 rows) fits, common (300) does not
    found = [h.chunk_id for h in store.keyword_search("rare common", 5, ALL)]
    assert found == exhaustive  # every row with "rare" outscores every row without
    store.bm25.budget = 5  # no term fits: rows with both "rare" and "middl"
    found = [h.chunk_id for h in store.keyword_search("rare middl common", 20, ALL)]
    both = {r.id for r in rows if "rare" in r.terms.split() and "middl" in r.terms.split()}
    assert set(found) == both


def pa_terms(rows):
    import pyarrow as pa

    return pa.array([r.terms for r in rows])


def test_chunk_tables_carry_a_schema_version_and_refuse_a_newer_one(engine):
    from sqlalchemy import text

    from citewell.errors import StoreError

    def version():
        return _read(engine, "SELECT version FROM citewell_chunk_tables WHERE name = 'sv'")

    store = PostgresChunkStore(engine, "sv", DIM)
    store.upsert(CORPUS)
    (current,) = version()
    assert current[0] >= 4
    with engine.begin() as db:  # what a later release would leave
        db.execute(text("UPDATE citewell_chunk_tables SET version = version + 1"))
    with pytest.raises(StoreError, match="schema version .* Upgrade Citewell"):
        PostgresChunkStore(engine, "sv", DIM)
    with engine.begin() as db:
        db.execute(text("UPDATE citewell_chunk_tables SET version = version - 1"))
    assert PostgresChunkStore(engine, "sv", DIM).count(ALL) == len(CORPUS)
    store.drop()
    assert version() == []


def test_a_current_table_opens_without_schema_statements(engine):
    """Its recorded version skips every step: no DDL, no lock on the table's writers."""
    from sqlalchemy import event

    PostgresChunkStore(engine, "once", DIM).upsert(CORPUS)
    statements = []

    def record(*args):
        statements.append(args[2])

    event.listen(engine, "before_cursor_execute", record)
    PostgresChunkStore(engine, "once", DIM)
    event.remove(engine, "before_cursor_execute", record)
    assert statements and not [
        s for s in statements if s.lstrip().upper().startswith(("CREATE", "ALTER", "UPDATE"))
    ]


def test_vectors_are_stored_as_the_float32_numbers_given(engine):
    """COPY writes vectors in pgvector's binary form, queries in text with nine digits:
    the float32 a vector holds comes back exactly, from a matrix and from Python floats
    alike (duplicated ids: the last one kept, as upsert keeps it); a chunk's other columns
    (no page, no headings) come back as written."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((3, DIM)).astype(np.float32) * np.float32(1e-3)
    literal = vector_literal(matrix[0])
    assert np.array_equal(np.asarray(parse_vector(literal), dtype=np.float32), matrix[0])
    assert vector_literal(tuple(matrix[0].tolist())) == literal
    store = PostgresChunkStore(engine, "exact", DIM)
    chunks = [make_chunk(f"e{n}", "fe", ("kb1",), f"Exact {n}.", 0) for n in (0, 1, 0)]
    assert upsert_matrix(store, [replace(c, vector=None) for c in chunks], matrix) == 3
    with engine.connect() as db:
        rows = dict(db.execute(text("SELECT id, vector::text FROM exact")).all())
    assert sorted(rows) == ["e0", "e1"]
    stored = {k: np.asarray(parse_vector(v), dtype=np.float32) for k, v in rows.items()}
    assert np.array_equal(stored["e0"], matrix[2]) and np.array_equal(stored["e1"], matrix[1])
    bare = replace(make_chunk("e2", "fe", (), "Ünïcode 北京, no page.", 0), page=None, headings=())
    store.upsert([replace(bare, vector=tuple(float(x) for x in matrix[1]))])
    (scanned,) = [c for c in store.scan(ChunkFilter(file_ids=("fe",))) if c.id == "e2"]
    assert scanned == replace(bare, vector=None)
    assert np.array_equal(np.asarray(store.vectors(["e2"])[0], dtype=np.float32), matrix[1])
    full = replace(make_chunk("e3", "fe", ("kb1", "kb2"), "Two KBs, headings.", 4), page=7,
                   headings=("Ä heading", "B, c"))  # fmt: skip
    store.upsert([replace(full, vector=tuple(float(x) for x in matrix[2]))])
    (scanned,) = [c for c in store.scan(ChunkFilter(file_ids=("fe",))) if c.id == "e3"]
    assert scanned == replace(full, vector=None)
    with engine.connect() as db:
        length = db.execute(text("SELECT length FROM exact WHERE id = 'e3'")).scalar_one()
    assert length == len(full.terms.split())


def test_a_filter_keeping_every_row_is_not_taken_for_a_part_after_another_writes(
    engine, monkeypatch
):
    """Its count is kept for a while; another process's write makes the table bigger. The
    filter's rows must be counted again, not its terms read (a part's statistics: seconds
    at a million rows), and the new row found."""
    store = PostgresChunkStore(engine, "whole", DIM)
    store.upsert(CORPUS)
    everything = ChunkFilter(kb_ids=("kb1", "kb2", "kb3"))
    assert store.count(everything) == len(CORPUS)
    assert store.keyword_search(terms_string("leave"), 3, everything)
    PostgresChunkStore(engine, "whole", DIM).upsert(
        [make_chunk("w1", "fw", ("kb1",), "Sabbatical leave after seven years.", 5)]
    )

    def read_terms(where: ChunkFilter) -> None:
        raise AssertionError("the filter's terms were read")

    monkeypatch.setattr(store._scopes, "_read", read_terms)
    sabbatical = terms_string("sabbatical")
    assert "w1" in {h.chunk_id for h in store.keyword_search(sabbatical, 3, everything)}
    PostgresChunkStore(engine, "whole", DIM).upsert(
        [make_chunk("w2", "fx", ("kb9",), "Sabbatical leave elsewhere.", 6)]
    )
    monkeypatch.undo()  # now a part of the table: its own statistics, w2 never seen
    assert {h.chunk_id for h in store.keyword_search(sabbatical, 3, everything)} == {"w1"}


def test_a_filter_keeping_every_row_is_counted_again_when_rows_come_and_go(engine):
    """Another process deletes one row of the filter's and adds one outside it: the table's
    rows are as many as before, but the filter is now a part, whose keywords are scored with
    its own statistics, never with those of rows its caller may not read."""
    store = PostgresChunkStore(engine, "pair", DIM)
    store.upsert(CORPUS)
    everything = ChunkFilter(kb_ids=("kb1", "kb2", "kb3"))
    leave = terms_string("leave")
    store.keyword_search(leave, 3, everything)  # counted: it keeps every row
    with engine.connect() as db:
        assert store._plan(db, everything)[:2] == (len(CORPUS), len(CORPUS))
    other = PostgresChunkStore(engine, "pair", DIM)  # another process
    other.upsert([make_chunk("p1", "fp", ("kb9",), "Another tenant's leave leave leave.", 5)])
    other.delete(ChunkFilter(file_ids=("f2",)))
    with engine.connect() as db:
        assert store._plan(db, everything)[:2] == (len(CORPUS), len(CORPUS) - 1)
    fresh = PostgresChunkStore(engine, "pair", DIM)  # no count kept from before
    assert store.keyword_search(leave, 3, everything) == fresh.keyword_search(leave, 3, everything)


def test_the_whole_tables_count_is_read_from_its_statistics_row_after_every_kind_of_write(
    engine,
):
    """Counting every row read the whole table (20-40 s at ten million); the statistics row
    every write keeps answers instead, and agrees with a count after upserts, replacements,
    links, unlinks and deletes."""
    store = PostgresChunkStore(engine, "counted", DIM)

    def counted() -> int:
        with engine.connect() as db:
            return int(db.execute(text("SELECT count(*) FROM counted")).scalar_one())

    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    store.upsert(CORPUS)
    store.upsert([replace(CORPUS[0], text="changed"), make_chunk("n1", "fn", ("kb1",), "new", 1)])
    store.link_files(["fn"], "kb2")
    store.unlink("fn", "kb1")
    store.unlink("fn", "kb2")  # its last KB: its rows go
    store.delete(ChunkFilter(file_ids=("f2",)))
    event.listen(engine, "before_cursor_execute", seen)
    try:
        whole = store.count(ChunkFilter())
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert not any("count(*)" in s for s in statements)
    assert whole == counted() > 0
    assert store.count(ChunkFilter(kb_ids=("kb1", "kb2", "kb3"))) == counted()


def test_ef_search_widens_with_the_table():
    from citewell.stores.postgres.store import ef_search

    assert ef_search(10_000, 8) == 100
    assert ef_search(10_000, 80) == 160
    assert ef_search(1_000_000, 8) == 800
    assert ef_search(4_000_000, 8) == 1000  # pgvector's limit


def test_every_filter_plan_finds_the_same_chunks(engine, monkeypatch):
    """A KB of a few rows is searched from its rows (exact vectors, candidates checked in
    memory), a wider one through the HNSW graph and a lookup per candidate: both give the
    same answers here, and the same as an unfiltered search restricted to the KB after."""
    import numpy as np
    import pyarrow as pa

    from citewell.retrieval.tokenize import terms_string
    from citewell.stores.memory.scope_statistics import ScopeStatistics
    from citewell.stores.postgres import store as postgres
    from citewell.types import ChunkFilter, StoredChunk

    rng = np.random.default_rng(3)
    words = ["leave", "policy", "remote", "work", "weeks", "office", "travel", "team"]
    rows = []
    for i in range(400):
        vector = rng.normal(size=DIM)
        text_ = " ".join(rng.choice(words, size=int(rng.integers(3, 12))))
        rows.append(
            StoredChunk(
                id=f"r{i}",
                file_id=f"f{i // 5}",
                kb_ids=("all", "few") if i % 20 == 0 else ("all",),
                index=i % 5,
                text=text_,
                start=0,
                end=len(text_),
                page=None,
                headings=(),
                file_name="f.md",
                terms=terms_string(text_),
                vector=tuple((vector / np.linalg.norm(vector)).tolist()),
            )  # fmt: skip
        )
    store = PostgresChunkStore(engine, "plans", DIM)
    store.upsert(rows)
    store.optimize()
    few = ChunkFilter(kb_ids=("few",))
    members = {r.id for r in rows if "few" in r.kb_ids}
    queries = [(terms_string(q), rows[n].vector) for n, q in ((3, "leave weeks"), (40, "team"))]

    def answers() -> list[list[str]]:
        found = []
        for terms, vector in queries:
            found.append([h.chunk_id for h in store.keyword_search(terms, 5, few)])
            found.append([h.chunk_id for h in store.vector_search(vector, 5, few)])
        return found

    with engine.connect() as db:
        assert store._plan(db, few) == (400, 20, "few")
    exact = answers()
    monkeypatch.setattr(postgres, "EXACT_ROWS", 0)
    store._counts = postgres.FilterCounts(store.count)
    with engine.connect() as db:
        assert store._plan(db, few) == (400, 20, "some")
    assert answers() == exact
    everything = ChunkFilter()
    pairs = zip(exact[::2], exact[1::2], strict=True)
    # Keyword scores are the KB's own (its N, df and lengths), as if it were the table.
    kept = [r for r in rows if r.id in members]
    scope = ScopeStatistics.of(pa.array([r.terms for r in kept]))
    for (terms, vector), (keyword, vectors) in zip(queries, pairs, strict=True):
        ranked = scope.rank(terms.split(), [(r.id, r.terms) for r in kept], 5)
        assert keyword == [chunk_id for chunk_id, _ in ranked]
        near = [h.chunk_id for h in store.vector_search(vector, 400, everything)]
        assert vectors == [i for i in near if i in members][:5]


def test_optimize_refreshes_statistics_only_of_tables_that_changed_enough(engine):
    """ANALYZE samples a table whatever its size: after each ingested batch it cost seconds
    at a million chunks. A new table is analysed; a few more rows later it is not."""
    from dataclasses import replace

    def analysed() -> dict[str, object]:
        sql = "SELECT relname, last_analyze FROM pg_stat_user_tables WHERE relname LIKE 'stat%'"
        return dict(_read(engine, sql))

    store = PostgresChunkStore(engine, "stat", DIM)
    store.upsert(CORPUS)
    store.optimize()
    first = analysed()
    assert first["stat"] is not None and first["stat_df"] is not None
    store.upsert([replace(c, id=f"more-{c.id}") for c in CORPUS[:2]])
    store.optimize()
    assert analysed() == first


def test_vectors_are_kept_in_the_rows_also_in_tables_made_before(engine):
    """Out of line (pgvector's default), every exact comparison reads a second relation."""
    from sqlalchemy import text

    def storage() -> str:
        sql = "SELECT attstorage FROM pg_attribute WHERE attrelid = 'vt'::regclass"
        sql += " AND attname = 'vector'"
        return str(_read(engine, sql)[0][0])

    store = PostgresChunkStore(engine, "vt", DIM)
    assert storage() == "m"
    with engine.begin() as db:  # as releases before the change (and before versions) made it
        db.execute(text("ALTER TABLE vt ALTER COLUMN vector SET STORAGE EXTERNAL"))
        db.execute(text("DELETE FROM citewell_chunk_tables WHERE name = 'vt'"))
    store = PostgresChunkStore(engine, "vt", DIM)
    assert storage() == "m"
    store.upsert(CORPUS)
    assert store.vector_search(CORPUS[2].vector, 1, ALL)[0].chunk_id == CORPUS[2].id


def _read(engine, sql: str) -> list:
    from sqlalchemy import text

    with engine.connect() as db:
        return list(db.execute(text(sql)).all())


def eventually(check, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.01)


def test_a_write_by_another_process_is_seen_once_its_notification_lands(engine):
    """Another process (here: another engine, with its own listener) retires the snapshot
    through the statistics row's notification; meanwhile the version is not read at all."""
    from sqlalchemy import event

    from citewell.db.changes import change_counter

    writer = PostgresChunkStore(engine, "t", DIM)
    writer.upsert(CORPUS)
    other = url_engine(engine.url.render_as_string(hide_password=False))
    reader = in_memory(other, "t")
    counter = change_counter(other)
    assert counter is not None
    eventually(lambda: counter.current() is not None)
    first = CORPUS[0]
    assert reader.vector_search(first.vector, 1, ALL)[0].chunk_id == first.id
    reads: list[str] = []
    event.listen(other, "before_cursor_execute", lambda *a: reads.append(a[2]))
    for _ in range(3):
        assert reader.vector_search(first.vector, 1, ALL)[0].chunk_id == first.id
    assert reads == []
    writer.delete(ALL.__class__(file_ids=(first.file_id,)))
    eventually(
        lambda: first.id not in {h.chunk_id for h in reader.vector_search(first.vector, 3, ALL)}
    )
    assert reader.get([first.id]) == []
    other.dispose()


class CopyWaitingKeeper(SnapshotKeeper):
    """Waits for the copy of a big table (no quiet period here) instead of sending the
    search to SQL meanwhile."""

    def current(self, wait=True):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            snapshot = super().current(wait)
            if snapshot is not None:
                return snapshot
            time.sleep(0.005)
        raise AssertionError("no copy of the table in 20 s")


def with_shared_copy(engine, table: str, copies, replica=None) -> PostgresChunkStore:
    """A "big" table (past a threshold of 4 rows) copied into memory, its copy kept in
    files under ``copies`` for every process of the machine (read from ``replica``)."""
    store = PostgresChunkStore(
        engine, table, DIM, 4, table_copy_mb=64, copies_dir=copies, replica=replica
    )
    made = store._snapshots
    store._snapshots = CopyWaitingKeeper(
        made._source, 4, check_interval=0.0, big_rows=made._big_rows, big_bytes=made._big_bytes,
        quiet=0.0, index=made._index,
    )  # fmt: skip
    return store


class TestPostgresChunkStoreWithSharedCopy(ScanConformance):
    """The same behaviour answered from the machine's shared copy of a big table."""

    @pytest.fixture
    def store(self, engine, tmp_path):
        return with_shared_copy(engine, "chunks_test", tmp_path / "copies")


def test_a_big_table_is_copied_once_per_machine_and_kept_current(engine, tmp_path):
    first = with_shared_copy(engine, "t", tmp_path / "copies")
    first.upsert(CORPUS)
    hits = first.vector_search(unit(0), 5, ChunkFilter(kb_ids=("kb1",)))
    assert hits[0].chunk_id == "c1"
    stats = first.table_copy()
    assert (stats.current, stats.shared, stats.rows) == (True, True, len(CORPUS))
    (made,) = (tmp_path / "copies" / "t").glob("v*")
    second = with_shared_copy(engine, "t", tmp_path / "copies")  # another API process
    assert second.vector_search(unit(0), 5, ChunkFilter(kb_ids=("kb1",)))[0].chunk_id == "c1"
    assert [p.name for p in (tmp_path / "copies" / "t").glob("v*")] == [made.name]  # mapped
    # A write through one process: the other's next search sees it (its version moved).
    second.upsert([make_chunk("c9", "f9", ("kb1",), "A ninth chunk.", 6)])
    assert first.vector_search(unit(6), 1, ChunkFilter(kb_ids=("kb1",)))[0].chunk_id == "c9"
    assert first.table_copy().needed_mb > 0


def test_writes_of_another_process_are_taken_into_the_copy_without_making_it_again(
    engine, tmp_path
):
    first = with_shared_copy(engine, "t2", tmp_path / "copies")
    first.upsert(CORPUS)
    copy = first._snapshots.current()
    (made,) = (tmp_path / "copies" / "t2").glob("v*")
    second = with_shared_copy(engine, "t2", tmp_path / "copies")  # another API process
    second.upsert([make_chunk("c9", "f9", ("kb1",), "A ninth chunk.", 6)])
    second.delete(ChunkFilter(file_ids=("f1",)))
    deadline = time.monotonic() + 5  # the other process hears of the write by notification
    while first.vector_search(unit(6), 1, ChunkFilter(kb_ids=("kb1",)))[0].chunk_id != "c9":
        assert time.monotonic() < deadline, "the write was not seen within 5 s"
        time.sleep(0.05)
    changed = first._snapshots.current()
    assert isinstance(changed, ChangedCopy) and changed.copy is copy
    assert first.keyword_search("leav", 5, ChunkFilter()) == []  # f1's rows are gone
    assert first.table_copy().changed_rows == 1
    assert [p.name for p in (tmp_path / "copies" / "t2").glob("v*")] == [made.name]


def test_a_restarted_process_takes_the_saved_copy_and_the_writes_since(engine, tmp_path):
    first = with_shared_copy(engine, "t3", tmp_path / "copies")
    first.upsert(CORPUS)
    first.vector_search(unit(0), 1, ChunkFilter())  # the copy is made and saved
    first.upsert([make_chunk("c9", "f9", ("kb1",), "A ninth chunk.", 6)])
    first.delete(ChunkFilter(file_ids=("f2",)))
    restarted = with_shared_copy(engine, "t3", tmp_path / "copies")
    assert restarted.vector_search(unit(6), 1, ChunkFilter())[0].chunk_id == "c9"
    copy = restarted._snapshots.current()
    assert isinstance(copy, ChangedCopy) and copy.changed_rows == 1
    assert len(list((tmp_path / "copies" / "t3").glob("v*"))) == 1  # not made again
    assert restarted.keyword_search("lunch", 5, ChunkFilter()) == []  # f2 is gone


@pytest.fixture
def replica(postgres):
    """A streaming replica of the session's PostgreSQL (started by pg_basebackup)."""
    standby = postgres.replica()
    yield standby
    standby.stop()


def _scans_on(url: str, table: str) -> int:
    """Sequential scans of ``table`` that the server at ``url`` has run (its own count)."""
    with psycopg.connect(url, autocommit=True) as connection:
        found = connection.execute(
            "SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_user_tables WHERE relname = %s",
            (table,),
        ).fetchone()
    return int(found[0]) if found else 0


def _wait_for_scan(url: str, table: str, before: int) -> None:
    deadline = time.monotonic() + 15  # backends report their counts when idle, within 1 s
    while _scans_on(url, table) <= before:
        assert time.monotonic() < deadline, f"no scan of {table} on the replica"
        time.sleep(0.2)


def _wait_for_replay(primary_url: str, standby_url: str) -> None:
    """Until the standby has replayed all the primary has written: a replica further behind
    than half a second is passed over, which a loaded machine would make this test see."""
    with psycopg.connect(primary_url, autocommit=True) as connection:
        (written,) = connection.execute("SELECT pg_current_wal_lsn()").fetchone() or (None,)
    deadline = time.monotonic() + 15
    with psycopg.connect(standby_url, autocommit=True) as connection:
        while True:
            (behind,) = connection.execute(
                "SELECT pg_wal_lsn_diff(%s, pg_last_wal_replay_lsn()) > 0", (written,)
            ).fetchone() or (True,)
            if not behind:
                return
            assert time.monotonic() < deadline, "the replica did not replay the write"
            time.sleep(0.05)


def test_copies_are_read_from_a_replica_and_a_lagging_or_stopped_one_is_passed_over(
    postgres, replica, tmp_path
):
    url = postgres.create_database()
    primary = url_engine(url)
    standby_url = replica.wait_for_database(url.rsplit("/", 1)[1])
    standby = url_engine(standby_url)
    store = with_shared_copy(primary, "r", tmp_path / "copies", replica=standby)
    before = _scans_on(standby_url, "r")
    store.upsert(CORPUS)
    _wait_for_replay(url, standby_url)
    assert store.vector_search(unit(0), 1, ChunkFilter())[0].chunk_id == "c1"
    _wait_for_scan(standby_url, "r", before)  # the copy was read there
    # Replay paused: the replica lags the write, so the changes are read from the primary.
    with psycopg.connect(standby_url, autocommit=True) as connection:
        connection.execute("SELECT pg_wal_replay_pause()")
    store.upsert([make_chunk("c9", "f9", ("kb1",), "A ninth chunk.", 6)])
    assert store.vector_search(unit(6), 1, ChunkFilter())[0].chunk_id == "c9"
    with psycopg.connect(standby_url, autocommit=True) as connection:
        connection.execute("SELECT pg_wal_replay_resume()")
    standby.dispose()
    replica.stop()  # gone: the primary answers, nothing is lost
    store.upsert([make_chunk("c8", "f8", ("kb1",), "An eighth chunk.", 7)])
    assert store.vector_search(unit(7), 1, ChunkFilter())[0].chunk_id == "c8"
    assert {h.chunk_id for h in store.keyword_search("chunk", 5, ChunkFilter())} == {"c8", "c9"}
    primary.dispose()


def test_a_copy_older_than_the_kept_changes_is_made_anew(engine, tmp_path):
    store = with_shared_copy(engine, "t4", tmp_path / "copies")
    store.upsert(CORPUS)
    copy = store._snapshots.current()
    for n in range(3):
        store.upsert([make_chunk(f"n{n}", f"fn{n}", ("kb1",), f"New chunk {n}.", n)])
    assert isinstance(store._snapshots.current(), ChangedCopy)
    store.changes.prune(engine, keep=1)  # as optimize does, past KEPT_VERSIONS writes
    with engine.connect() as db:
        kept = db.execute(text("SELECT count(DISTINCT version) FROM t4_changes")).scalar_one()
    assert kept == 1
    store.upsert([make_chunk("n3", "fn3", ("kb1",), "New chunk 3.", 3)])
    found = store._snapshots.current()
    assert not isinstance(found, ChangedCopy) and found is not copy  # made again
    assert set(found.get(["n0", "n3"])) == {"n0", "n3"}
