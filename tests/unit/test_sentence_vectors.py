"""Sentence vectors: how a chunk's sentence pairs are made, mapped back and searched."""

from dataclasses import replace

from citewell.ingest.sentences import sentence_pairs, sentence_rows
from citewell.retrieval.retriever import HybridRetriever, RetrievalSettings, SearchSpace
from citewell.retrieval.sentences import (
    PairedLabels,
    best_per_chunk,
    chunk_of,
    sentence_id,
    stand_ins,
    weights,
)
from citewell.retrieval.tokenize import terms_string
from citewell.stores.base import SearchHit
from citewell.stores.lance.store import LanceChunkStore
from citewell.testing.fakes import FakeHashEmbedder
from citewell.types import ChunkFilter, SearchMode, StoredChunk

TEXT = (
    "Herons wade in the shallows at dawn. They spear fish with long bills. "
    "Ok. Colonies nest high in the alders beside the lake."
)


def chunk(cid: str, text: str, kb: str = "kb", file_id: str = "") -> StoredChunk:
    return StoredChunk(
        cid, file_id or f"f-{cid}", (kb,), 0, text, 0, len(text), None, ("Birds",), "b.md", "t"
    )


def test_each_sentence_is_joined_with_the_next_and_short_ones_drop():
    assert sentence_pairs(TEXT) == [
        "Herons wade in the shallows at dawn. They spear fish with long bills.",
        "They spear fish with long bills. Colonies nest high in the alders beside the lake.",
        "Colonies nest high in the alders beside the lake.",
    ]
    assert sentence_pairs("") == [] and sentence_pairs("Short. Tiny.") == []
    headed = sentence_pairs("# Heron facts and figures\n\nOne long sentence about herons.")
    assert headed[0] == "Heron facts and figures One long sentence about herons."


def test_pair_rows_keep_their_chunks_file_and_labels_and_map_back():
    rows, texts = sentence_rows(
        [chunk("c1", TEXT), chunk("c2", "Too short.")], ["Birds\n\n" + TEXT, "Birds\n\nToo short."]
    )
    assert [r.id for r in rows] == ["c1.0", "c1.1", "c1.2", "c2.0"]
    assert texts == [r.text for r in rows]
    assert texts[-1] == "Birds\n\nToo short."  # no sentence long enough: the chunk as embedded
    assert {r.file_id for r in rows[:3]} == {"f-c1"} and all(r.kb_ids == ("kb",) for r in rows)
    assert all(r.terms == "" and r.headings == () for r in rows)  # pairs are never BM25-searched
    assert {chunk_of(r.id) for r in rows} == {"c1", "c2"}
    assert chunk_of(sentence_id("abc", 12)) == "abc"


def test_pair_hits_become_each_chunks_best():
    hits = [SearchHit("a.1", 0.9, 0), SearchHit("b.0", 0.8, 1), SearchHit("a.0", 0.7, 2)]
    best = best_per_chunk([*hits, SearchHit("c.3", 0.6, 3)], 2)
    assert best == [SearchHit("a", 0.9, 0), SearchHit("b", 0.8, 1)]
    assert weights(0.5, False) == [0.5, 0.5]
    assert weights(0.4, True) == [0.3, 0.3, 0.4]


def _stored(embedder, row: StoredChunk, text: str | None = None) -> StoredChunk:
    vector = embedder.embed([text or row.text])[0].tolist()
    return replace(row, terms=terms_string(row.text), vector=tuple(vector))


def test_a_chunk_found_by_one_sentence_ranks_and_other_kbs_pairs_stay_out(tmp_path):
    embedder = FakeHashEmbedder()
    chunks = LanceChunkStore(tmp_path / "lance", "chunks", embedder.dimension)
    pairs = LanceChunkStore(tmp_path / "lance", "chunks_sentences", embedder.dimension)
    filler = "grebes dive for snails among reeds " * 6
    texts = {
        "hit": f"{filler}. Storks migrate south every autumn over the sea.",
        "near": "storks storks the sea",
        "other": "Storks migrate south every autumn over the sea.",  # another KB's chunk
    }
    rows = [chunk("hit", texts["hit"]), chunk("near", texts["near"])]
    rows.append(chunk("other", texts["other"], kb="kb2"))
    chunks.upsert([_stored(embedder, r) for r in rows])
    made, _ = sentence_rows(rows, [r.text for r in rows])
    pairs.upsert([_stored(embedder, r) for r in made])
    space = SearchSpace(chunks, embedder, pairs)
    retriever = HybridRetriever(None, None, RetrievalSettings(), current=lambda: space)
    query = "Storks migrate south every autumn over the sea."
    plain = HybridRetriever(chunks, embedder, RetrievalSettings())
    kb = ChunkFilter(kb_ids=("kb",))
    for mode in (SearchMode.VECTOR, SearchMode.HYBRID):
        with_pairs = retriever.search(query, kb, 2, mode)
        assert with_pairs[0].chunk_id == "hit", mode  # its one sentence is the query
        assert with_pairs[0].sentence_score is not None
        assert with_pairs[0].sentence_score > (with_pairs[0].vector_score or 0.0)
        assert {r.chunk.kb_ids for r in with_pairs} == {("kb",)}
    assert plain.search(query, kb, 1, SearchMode.VECTOR)[0].chunk_id == "near"


def test_a_pair_left_behind_in_a_kb_cannot_bring_its_chunk_back(tmp_path):
    embedder = FakeHashEmbedder()
    chunks = LanceChunkStore(tmp_path / "lance", "chunks", embedder.dimension)
    pairs = LanceChunkStore(tmp_path / "lance", "chunks_sentences", embedder.dimension)
    text = "Storks migrate south every autumn over the sea."
    chunks.upsert([_stored(embedder, chunk("c", text, kb="kb2"))])  # the file left kb
    stale, _ = sentence_rows([chunk("c", text, kb="kb")], [text])  # as a crash could leave
    pairs.upsert([_stored(embedder, r) for r in stale])
    space = SearchSpace(chunks, embedder, pairs)
    retriever = HybridRetriever(None, None, RetrievalSettings(), current=lambda: space)
    for mode in (SearchMode.VECTOR, SearchMode.HYBRID):
        assert retriever.search(text, ChunkFilter(kb_ids=("kb",)), 5, mode) == []
        assert len(retriever.search(text, ChunkFilter(kb_ids=("kb2",)), 5, mode)) == 1


def test_chunks_of_a_kb_without_pairs_keep_their_whole_vector_weight(tmp_path):
    """Searching a KB with pairs and one without at once: the plain KB's chunk takes its own
    vector score in the pairs' list, so the same text ranks alike in either KB."""
    embedder = FakeHashEmbedder()
    chunks = LanceChunkStore(tmp_path / "lance", "chunks", embedder.dimension)
    pairs = LanceChunkStore(tmp_path / "lance", "chunks_sentences", embedder.dimension)
    text = "Storks migrate south every autumn over the sea. Grebes dive for snails in reeds."
    rows = [chunk("paired", text, kb="kb"), chunk("plain", text + " Swans.", kb="kb2")]
    chunks.upsert([_stored(embedder, r) for r in rows])
    made, _ = sentence_rows(rows[:1], [text])
    pairs.upsert([_stored(embedder, r) for r in made])
    space = SearchSpace(chunks, embedder, pairs)
    retriever = HybridRetriever(None, None, RetrievalSettings(), current=lambda: space)
    both = ChunkFilter(kb_ids=("kb", "kb2"))
    found = retriever.search(text + " Swans.", both, 2, SearchMode.VECTOR)
    assert [r.chunk_id for r in found] == ["plain", "paired"]  # its own text ranks first
    assert found[0].sentence_score is None  # it has no pairs (its vector stood in)
    assert found[1].sentence_score is not None  # from its pair
    assert found[0].score > found[1].score


def test_labels_are_split_by_whether_they_hold_pairs_and_counted_once_a_while(tmp_path):
    embedder = FakeHashEmbedder()
    pairs = LanceChunkStore(tmp_path / "lance", "chunks_sentences", embedder.dimension)
    made, _ = sentence_rows([chunk("c", TEXT, kb="kb")], [TEXT])
    pairs.upsert([_stored(embedder, r) for r in made])
    labels = PairedLabels(ttl=60)
    where = ChunkFilter(kb_ids=("kb", "kb2"), file_ids=("f",))
    empty = LanceChunkStore(tmp_path / "lance", "other_sentences", embedder.dimension)
    none = ChunkFilter(kb_ids=(), file_ids=("f",))
    assert labels.split(empty, where) == (replace(where, kb_ids=()), where)
    assert labels.split(empty, ChunkFilter(file_ids=("f",)))[0] == none  # no pair search
    assert labels.split(pairs, where) == (
        ChunkFilter(kb_ids=("kb",), file_ids=("f",)),
        ChunkFilter(kb_ids=("kb2",), file_ids=("f",)),
    )
    every = ChunkFilter(file_ids=("f",))  # every KB the caller may read
    assert labels.split(pairs, every) == (every, ChunkFilter(kb_ids=(), file_ids=("f",)))
    pairs.upsert([_stored(embedder, replace(made[0], id="d.0", kb_ids=("kb2",)))])
    assert labels.split(pairs, where)[1].kb_ids == ("kb2",)  # remembered for ttl seconds
    assert PairedLabels().split(pairs, where)[1].kb_ids == ()


def test_stand_ins_merge_by_score_and_keep_each_chunks_best():
    best = [SearchHit("a", 0.9, 0), SearchHit("c", 0.6, 1)]
    plain = [SearchHit("b", 0.7, 0), SearchHit("c", 0.8, 1)]
    assert stand_ins(best, plain) == [
        SearchHit("a", 0.9, 0),
        SearchHit("c", 0.8, 1),
        SearchHit("b", 0.7, 2),
    ]
    assert stand_ins(best, []) == best
