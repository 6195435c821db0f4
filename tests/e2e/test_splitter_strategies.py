"""Each chunking strategy end to end: ingest a real document with it, search, and find the
passage with exact offsets into the stored text."""

from __future__ import annotations

import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.splitters import SPLITTERS

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("strategy", sorted(SPLITTERS))
def test_ingest_and_search_with_each_strategy(strategy, tmp_path, onnx_embedder, shared_docs):
    settings = Settings.load(data_dir=tmp_path, text_splitter=strategy, chunk_size=400)
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    try:
        report = app.ingest([shared_docs / "multi_page.pdf"], "docs")
        assert report.chunks_embedded > 3, strategy
        hits = app.search("Who patented the typewriter in 1868?", ["docs"], k=3)
        text = app.storage.text(hits[0].chunk.file_id)
        assert text is not None
        for hit in hits:
            assert text[hit.chunk.start : hit.chunk.end] == hit.chunk.text
        assert any("1868" in hit.chunk.text for hit in hits), strategy
    finally:
        app.close()
