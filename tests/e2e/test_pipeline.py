"""The library's ingest/search/delete lifecycle against the real store and embedder."""

import pytest

from citewell.types import ChunkFilter, SearchMode

pytestmark = pytest.mark.e2e

HANDBOOK = (
    "# Handbook\n\n## Leave\n\nParental leave lasts sixteen weeks at full pay.\n\n"
    "## Food\n\nThe cafeteria serves lunch from noon until two."
)


def test_changed_file_replaces_its_chunks(app, tmp_path):
    doc = tmp_path / "handbook.md"
    doc.write_text(HANDBOOK)
    app.ingest([doc], "hr")
    doc.write_text(HANDBOOK.replace("sixteen", "twenty"))
    report = app.ingest([doc], "hr")
    assert report.files_indexed == 1
    texts = [r.chunk.text for r in app.search("parental leave weeks", ["hr"], k=10)]
    assert any("twenty" in t for t in texts) and not any("sixteen" in t for t in texts)
    assert len(app.store.file_ids()) == 1


def test_deleting_a_kb_removes_chunks_only_it_used(app, tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text(HANDBOOK)
    b.write_text("# Other\n\nRemote work is allowed two days a week.")
    app.ingest([a, b], "one")
    app.ingest([a], "two")
    app.delete_kb("one")
    assert app.store.count(ChunkFilter()) == app.store.count(
        ChunkFilter(kb_ids=(app.catalog.get_kb("two").id,))
    )
    assert [r.chunk.file_name for r in app.search("remote work", ["two"], SearchMode.BM25)] == []


def test_search_across_several_kbs_merges_and_dedupes(app, tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "copy.md"
    a.write_text(HANDBOOK)
    b.write_text(HANDBOOK + "\n")  # other bytes, same passages
    app.ingest([a], "one")
    app.ingest([b], "two")
    results = app.search("parental leave", ["one", "two"], k=10)
    texts = [r.chunk.text for r in results]
    assert len(texts) == len(set(texts))
    assert {r.kb_id for r in results} <= {
        app.catalog.get_kb("one").id,
        app.catalog.get_kb("two").id,
    }


def test_relevance_threshold_drops_weak_results(app, tmp_path, settings):
    doc = tmp_path / "h.md"
    doc.write_text(HANDBOOK)
    app.ingest([doc], "hr")
    app.live.update({"relevance_threshold": 0.99})
    results = app.search("parental leave", ["hr"], SearchMode.HYBRID, k=10)
    assert all(r.score >= 0.99 for r in results) and len(results) <= 1


def test_every_mode_finds_the_passage(app, tmp_path):
    doc = tmp_path / "h.md"
    doc.write_text(HANDBOOK)
    app.ingest([doc], "hr")
    for mode in SearchMode:
        top = app.search("How long is parental leave?", ["hr"], mode, k=1)[0]
        assert "sixteen weeks" in top.chunk.text, mode
        # The small sections merge forward (chunk_min_size_target); a merged chunk keeps
        # the heading path of its first part, as Open WebUI's algorithm specifies.
        assert top.chunk.headings == ("Handbook",)


def test_hybrid_result_keeps_per_retriever_scores(app, tmp_path):
    doc = tmp_path / "h.md"
    doc.write_text(HANDBOOK)
    app.ingest([doc], "hr")
    top = app.search("parental leave", ["hr"], SearchMode.HYBRID, k=1)[0]
    assert top.vector_rank == 0 and top.bm25_rank == 0 and top.score == pytest.approx(1.0)


def test_changing_one_of_two_identical_files_keeps_the_other(app, tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text(HANDBOOK)
    b.write_text(HANDBOOK)
    first = app.ingest([a, b], "hr")
    assert (first.files_indexed, first.files_linked) == (1, 1)
    b.write_text(HANDBOOK.replace("sixteen", "twenty"))
    app.ingest([a, b], "hr")
    texts = [r.chunk.text for r in app.search("parental leave weeks", ["hr"], k=10)]
    assert any("sixteen" in t for t in texts) and any("twenty" in t for t in texts)
    assert len(app.store.file_ids()) == 2
