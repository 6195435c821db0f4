"""Server mode's storage end to end: database_url names PostgreSQL, and the catalog, jobs,
users and the chunks (pgvector + BM25) all live there; the data dir keeps only files."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from citewell.config import Settings
from citewell.pipeline import Citewell
from citewell.stores.postgres import PostgresChunkStore
from citewell.types import ChunkFilter, SearchMode

pytestmark = pytest.mark.e2e


def test_ingest_search_and_check_with_everything_in_postgresql(
    tmp_path, postgres, onnx_embedder, shared_docs
):
    url = postgres.create_database()
    settings = Settings.load(data_dir=tmp_path / "data", database_url=url)
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    assert isinstance(app.store, PostgresChunkStore)
    kb = app.create_kb("docs")
    report = app.ingest([shared_docs / "wiki_duck.html", shared_docs / "codeblock.md"], kb.id)
    assert report.files_failed == 0 and report.files_indexed == 2
    for mode in SearchMode:
        hits = app.search("Where do ducks live?", [kb.id], mode, 3)
        assert hits and "duck" in hits[0].chunk.text.lower(), mode
    assert app.check(recall_samples=0).problems == 0
    assert not (tmp_path / "data" / "citewell.sqlite").exists()
    assert not (tmp_path / "data" / "lancedb").exists()
    tables = set(inspect(app.catalog.engine).get_table_names())
    assert {"knowledge_bases", "jobs", "users", app.store.table} <= tables
    # A second process on the same database sees the same KB and chunks.
    again = Citewell.from_settings(settings, embedder=onnx_embedder)
    assert again.catalog.resolve_kb("docs").file_count == 2
    where = ChunkFilter(kb_ids=(kb.id,))
    assert again.store.count(where) == app.store.count(where) > 0
