"""bm25_enriched_texts (Open WebUI's ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS): a chunk is
found by BM25 through its file name and title, not only its own words and headings."""

from __future__ import annotations

import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.testing.fakes import FakeHashEmbedder
from citewell.types import SearchMode

TEXT = "Staff may take sixteen weeks after a birth or an adoption."


@pytest.mark.parametrize("enriched", [True, False])
def test_the_file_name_is_searchable_only_when_enriched(tmp_path, enriched):
    settings = Settings.load(data_dir=tmp_path, bm25_enriched_texts=enriched)
    app = Citewell.from_settings(settings, embedder=FakeHashEmbedder(16))
    app.ingest_texts([("parental_leave-Policy.txt", TEXT)], "hr")
    found = app.search("policy parental", ["hr"], SearchMode.BM25, k=5)
    assert bool(found) is enriched
    if enriched:
        assert found[0].chunk.text == TEXT  # the name is searched, never shown as text
    app.close()
