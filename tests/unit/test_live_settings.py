"""LiveSettings: start-up settings with run-time changes laid over them, as one handle."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine

from citewell.catalog.runtime import RuntimeSettingsStore
from citewell.config import Settings
from citewell.errors import ConfigError, InvalidInput
from citewell.live_settings import RUNTIME_SETTINGS, LiveSettings, runtime_changes
from citewell.testing.fakes import FakeHashEmbedder
from citewell.types import Document


@pytest.fixture
def store(tmp_path):
    return RuntimeSettingsStore(create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}"))


@pytest.fixture
def start(tmp_path):
    return Settings.load(data_dir=tmp_path)


def test_a_change_is_one_new_handle_and_the_old_one_stays_whole(start, store):
    live = LiveSettings(start, store)
    before = live.current
    assert live.update({"top_k": 3, "hybrid_bm25_weight": 0.2}) == ["hybrid_bm25_weight", "top_k"]
    after = live.current
    assert (before.settings.retrieval.top_k, before.ranking.settings.bm25_weight) == (8, 0.5)
    assert (after.settings.retrieval.top_k, after.ranking.settings.bm25_weight) == (3, 0.2)
    assert after.changed == {"top_k": 3, "hybrid_bm25_weight": 0.2}


def test_other_processes_see_it_after_their_refresh_interval(start, store):
    writer = LiveSettings(start, store)
    reader = LiveSettings(start, store, refresh_seconds=0.0)
    slow = LiveSettings(start, store, refresh_seconds=3600)
    writer.update({"relevance_threshold": 0.4})
    assert reader.settings.retrieval.relevance_threshold == 0.4
    assert slow.settings.retrieval.relevance_threshold == 0.0  # until its next refresh
    writer.reset()
    assert reader.settings == start


def test_values_equal_to_those_in_force_are_no_change(start, store):
    live = LiveSettings(start, store)
    assert live.update({"top_k": start.retrieval.top_k, "fusion": start.retrieval.fusion}) == []
    assert store.load() == {}


def test_invalid_or_fixed_settings_are_refused_and_nothing_is_kept(start, store):
    live = LiveSettings(start, store)
    with pytest.raises(ConfigError, match="chunk_overlap"):
        live.update({"top_k": 2, "chunk_overlap": start.chunking.chunk_size})
    with pytest.raises(InvalidInput, match="restart"):
        live.update({"embedding_model": "other"})
    assert live.settings == start and store.load() == {}


def test_a_kept_value_that_no_longer_validates_does_not_stop_start_up(start, store):
    store.save({"chunk_overlap": 10**9, "no_such_setting": 1}, "admin")
    assert LiveSettings(start, store).settings == start


def test_changes_in_this_process_only_outlive_refreshes(start, store):
    live = LiveSettings(start, store, refresh_seconds=0.0)
    live.update({"candidate_k": 99}, persist=False)
    LiveSettings(start, store).update({"top_k": 4})  # another process
    assert (live.settings.retrieval.candidate_k, live.settings.retrieval.top_k) == (99, 4)
    assert store.load() == {"top_k": 4}


def test_the_splitter_follows_the_chunking_settings(start, store):
    live = LiveSettings(start, store)
    embedder = FakeHashEmbedder(8)
    first = live.splitter_for(embedder)
    assert live.splitter_for(embedder) is first  # built once per change
    live.update({"chunk_size": 100, "chunk_overlap": 0})
    document = Document(text="word " * 200, name="w.txt", mime_type="text/plain")
    assert len(live.splitter_for(embedder).split(document)) > len(first.split(document))


def test_open_webui_names_and_echoed_answers_translate():
    body = {
        "status": True,
        "TOP_K": 4,
        "changed": ["top_k"],
        "settings": {"fusion": "rrf", "reranker_api_key": "********"},
        "RAG_EXTERNAL_RERANKER_API_KEY": "********",
    }
    assert runtime_changes(body) == {"top_k": 4, "fusion": "rrf"}
    with pytest.raises(InvalidInput, match="ENABLE_WEB_SEARCH"):
        runtime_changes({"ENABLE_WEB_SEARCH": True})
    assert set(RUNTIME_SETTINGS) <= set(Settings.fields())


def test_the_user_guide_names_every_setting_that_changes_at_run_time():
    from pathlib import Path

    guide = (Path(__file__).parents[2] / "docs" / "user-guide.md").read_text()
    section = guide.split("## Changing settings while the server runs", 1)[1].split("\n## ")[0]
    prompts = ("contextual_prompt", "summary_prompt", "contextual_model")  # "their prompts, model"
    limits = ("contextual_document_tokens", "contextual_concurrency")  # "and limits"
    semantic = ("semantic_threshold", "semantic_percentile", "semantic_window")  # semantic_*
    missing = [
        name
        for name in RUNTIME_SETTINGS
        if f"`{name}`" not in section and name not in prompts + limits + semantic
    ]
    assert missing == []
