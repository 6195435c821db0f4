from pathlib import Path

import pytest

from citewell.config import Settings, configuration_markdown, env_names
from citewell.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_open_webui_names_are_accepted(monkeypatch):
    monkeypatch.setenv("CHUNK_SIZE", "1500")
    monkeypatch.setenv("RAG_TOP_K", "4")
    monkeypatch.setenv("ENABLE_RAG_HYBRID_SEARCH", "false")
    monkeypatch.setenv("RAG_HYBRID_BM25_WEIGHT", "0.3")
    monkeypatch.setenv("RAG_EMBEDDING_ENGINE", "")  # Open WebUI's name for the local engine
    s = Settings.load()
    assert (
        s.chunking.chunk_size,
        s.retrieval.top_k,
        s.retrieval.hybrid_search,
        s.retrieval.hybrid_bm25_weight,
    ) == (1500, 4, False, 0.3)
    assert s.embedding.embedding_engine == "onnx"


def test_open_webui_web_settings_carry_over(monkeypatch):
    monkeypatch.setenv("WEB_SEARCH_ENGINE", "searxng")
    monkeypatch.setenv("SEARXNG_QUERY_URL", "http://searxng:8080/search")
    monkeypatch.setenv("WEB_SEARCH_RESULT_COUNT", "5")
    monkeypatch.setenv("ENABLE_RAG_LOCAL_WEB_FETCH", "true")
    monkeypatch.setenv("YOUTUBE_LOADER_LANGUAGE", "de,en")
    monkeypatch.setenv("WEB_LOADER_TIMEOUT", "")  # empty: the default
    s = Settings.load()
    assert (s.web.web_search_engine, s.web.searxng_query_url) == (
        "searxng",
        "http://searxng:8080/search",
    )
    assert (s.web.web_search_result_count, s.web.web_fetch_allow_private) == (5, True)
    assert (s.web.youtube_languages, s.web.web_fetch_timeout) == ("de,en", 20.0)


def test_citewell_names_and_precedence(monkeypatch, tmp_path):
    config = tmp_path / "citewell.toml"
    config.write_text("chunk_size = 700\ntop_k = 3\ncandidate_k = 40\n")
    monkeypatch.setenv("CITEWELL_TOP_K", "6")
    s = Settings.load(config, candidate_k=50)
    assert s.chunking.chunk_size == 700  # file
    assert s.retrieval.top_k == 6  # environment beats file
    assert s.retrieval.candidate_k == 50  # keyword arguments beat everything


def test_default_data_dir_is_per_user(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert Settings.load().storage.data_dir == tmp_path / "citewell"


@pytest.mark.parametrize(
    "bad", [{"chunk_overlap": 2000}, {"hybrid_bm25_weight": 2}, {"fusion": "magic"}, {"top_k": 0}]
)
def test_invalid_settings_say_what_is_wrong(bad):
    with pytest.raises(ConfigError, match="Invalid settings"):
        Settings.load(**bad)


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        Settings.load(tmp_path / "nope.toml")


def test_every_setting_is_documented():
    reference = (REPO / "docs" / "configuration.md").read_text()
    assert reference == configuration_markdown(), (
        "run: citewell config --markdown > docs/configuration.md"
    )
    for name, info in Settings.fields().items():
        assert info.description, f"{name} has no description"
        for env in env_names(name, info):
            assert f"`{env}`" in reference


def test_an_embedding_model_the_onnx_engine_cannot_run_stops_start_up(monkeypatch, tmp_path):
    # Open WebUI's environment left behind: its model path would quietly name a new space.
    monkeypatch.setenv("RAG_EMBEDDING_MODEL", "/app/backend/data/cache/embedding/models/bge-m3")
    with pytest.raises(ConfigError) as refused:
        Settings.load()
    message = refused.value.message
    assert "embedding_model" in message and "RAG_EMBEDDING_MODEL" in message
    assert "embedding_onnx_path" in message  # and what to do about it
    monkeypatch.setenv("RAG_EMBEDDING_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    assert Settings.load().embedding.embedding_engine == "onnx"  # Open WebUI's default carries over
    monkeypatch.setenv("RAG_EMBEDDING_MODEL", "bge-m3")
    assert Settings.load(embedding_engine="ollama").embedding.embedding_model == "bge-m3"
    assert (
        Settings.load(embedding_onnx_path=tmp_path / "bge.onnx").embedding.embedding_model
        == "bge-m3"
    )


def test_masked_settings_hide_keys_and_url_passwords(tmp_path: Path) -> None:
    from citewell.config import masked_settings

    settings = Settings.load(
        data_dir=tmp_path,
        llm_api_key="sk-secret",
        database_url="postgresql://citewell:hunter2@db.example/citewell",
        web_search_url="https://search.example/api?key=topsecretkey&q={query}",
        embedding_max_tokens=128,
    )
    shown = masked_settings(settings)
    text = str(shown)
    assert "sk-secret" not in text and "hunter2" not in text and "topsecretkey" not in text
    assert shown["llm_api_key"] == "********"
    assert shown["tavily_api_key"] == ""  # unset stays visibly unset
    assert shown["database_url"] == "postgresql://citewell:********@db.example/citewell"
    assert shown["embedding_max_tokens"] == 128
    assert set(shown) == set(Settings.fields())


def test_settings_come_in_sections_and_keep_their_plain_names(tmp_path):
    config = tmp_path / "citewell.toml"
    config.write_text("top_k = 3\n[chunking]\nchunk_size = 640\n[llm]\nllm_model = 'm'\n")
    s = Settings.load(config, data_dir=tmp_path)
    assert (s.retrieval.top_k, s.chunking.chunk_size, s.llm.llm_model) == (3, 640, "m")
    assert s.value("chunk_size") == 640 and s.flat()["llm_model"] == "m"
    assert Settings(chunk_size=500).chunking.chunk_size == 500  # plain names build too
    changed = s.with_values({"top_k": 5})
    assert (changed.retrieval.top_k, s.retrieval.top_k) == (5, 3)  # settings are immutable
    with pytest.raises(ConfigError, match="chunk_overlap"):
        s.with_values({"chunk_overlap": 5000})


def test_a_list_setting_from_the_environment_is_json(monkeypatch):
    monkeypatch.setenv("CITEWELL_CHUNK_SEPARATORS", '["\\n\\n", "."]')
    assert Settings.load().chunking.chunk_separators == ["\n\n", "."]
    monkeypatch.setenv("CITEWELL_CHUNK_SEPARATORS", "not json")
    with pytest.raises(ConfigError, match="CITEWELL_CHUNK_SEPARATORS.*JSON"):
        Settings.load()


def test_an_unreadable_config_file_says_so(tmp_path):
    config = tmp_path / "citewell.toml"
    config.write_text("chunk_size = = 3\n")
    with pytest.raises(ConfigError, match="cannot be read"):
        Settings.load(config)


def test_scopes_say_where_else_a_setting_may_change():
    from dataclasses import fields

    from citewell.catalog.kb_settings import KnowledgeSettings
    from citewell.live_settings import KB_CHUNKING, RUNTIME_SETTINGS
    from citewell.operations.spaces import EMBEDDING_SETTINGS

    assert set(EMBEDDING_SETTINGS) == set(Settings.fields()) & {
        n for n in Settings.fields() if n.startswith("embedding_")
    }
    assert {"top_k", "chunk_size", "rag_template"} <= set(RUNTIME_SETTINGS)
    assert not {"data_dir", "auth", "embedding_model"} & set(RUNTIME_SETTINGS)
    assert {"chunk_size", "sentence_vectors", "bm25_enriched_texts"} <= set(KB_CHUNKING)
    # A KB's retrieval defaults override the settings marked per KB, one for one.
    kb_names = {"mode": "hybrid_search", "rerank": "reranker", "full_context": "rag_full_context"}
    own = {kb_names.get(f.name, f.name) for f in fields(KnowledgeSettings)} - {"chunking"}
    assert own == set(Settings.names_where(kb=True))
