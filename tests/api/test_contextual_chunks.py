"""Contextual retrieval and document summaries against a wire-faithful fake LLM server
(FakeLLMService: it answers a context prompt with "This chunk is from the document titled
<first line>"): the context is searchable and embedded, never part of a chunk's text or
offsets, costs one LLM call per chunk once, and its cost can be asked first."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.errors import ConfigError
from tests.api.conftest import run_server
from tests.fake_servers import FakeLLMService, serve

# Plain text (no headings) whose paragraphs after the first line never name the bridge:
# only their contexts can make BM25 find them by "Quarry".
REPORT = "Quarry Lane Bridge inspection 2026\n\n" + "\n\n".join(
    f"Span {i}: the bearings were greased and the expansion joints sealed; corrosion on "
    f"girder {i} is light and needs no work before the next survey."
    for i in range(12)
)


@dataclass
class World:
    url: str
    app: Citewell
    llm: FakeLLMService

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)

    def context_calls(self) -> int:
        return sum(1 for _, body in self.llm.requests if "<chunk>" in str(body))

    def summary_calls(self) -> int:
        return sum(1 for _, b in self.llm.requests if "Summarise this document" in str(b))


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder) -> Iterator[World]:
    llm = FakeLLMService()
    with serve(llm) as llm_url:
        settings = Settings.load(
            data_dir=tmp_path_factory.mktemp("contextual"),
            auth="none",
            llm_base_url=llm_url + "/v1",
            llm_model="fake-llm",
            contextual_chunks=True,
            document_summary=True,
            chunk_size=300,
            chunk_overlap=0,
        )
        app = Citewell.from_settings(settings, embedder=onnx_embedder)
        with run_server(settings, onnx_embedder, app) as url:
            yield World(url, app, llm)


def _upload(client: httpx.Client, kb: str, name: str, text: str) -> dict:
    response = client.post(f"/api/v1/knowledge/{kb}/files", files={"file": (name, text.encode())})
    assert response.status_code == 201, response.text
    return response.json()


def test_the_cost_is_told_before_anything_is_stored(world):
    with world.client() as client:
        client.post("/api/v1/knowledge", json={"name": "bridges"})
        before = len(world.llm.requests)
        response = client.post(
            "/api/v1/knowledge/bridges/files/estimate",
            files=[("files", ("report.txt", REPORT.encode()))],
        )
        assert response.status_code == 200, response.text
        estimate = response.json()
        assert estimate["chunks"] > 3 and estimate["files"] == 1
        assert estimate["llm_calls"] == estimate["chunks"] + 1  # a context each, one summary
        assert estimate["prompt_tokens"] > len(REPORT) // 4
        assert len(world.llm.requests) == before  # nothing asked of the LLM
        assert client.get("/api/v1/knowledge/bridges").json()["files"] == []


def test_the_context_is_searched_but_never_shown_as_text(world):
    with world.client() as client:
        record = _upload(client, "bridges", "report.txt", REPORT)["file"]
        assert world.context_calls() == record["chunk_count"] and world.summary_calls() == 1
        text = client.get(f"/api/v1/files/{record['id']}/text").json()["text"]
        found = client.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": ["bridges"], "query": "quarry", "mode": "bm25", "k": 50},
        ).json()["results"]
    assert len(found) == record["chunk_count"]  # every chunk, by the words of its context
    assert any("Quarry" not in r["text"] for r in found)
    for result in found:
        assert "document titled" not in result["text"] and "Summary:" not in result["text"]
        assert text[result["start"] : result["end"]] == result["text"]


def test_the_same_text_again_costs_no_llm_call(world):
    older = REPORT.replace("2026", "2025")
    with world.client() as client:
        client.post("/api/v1/knowledge", json={"name": "archive"})
        file_id = _upload(client, "archive", "older.txt", older)["file"]["id"]
        removed = client.delete(f"/api/v1/knowledge/archive/files/{file_id}")
        assert removed.status_code == 204, removed.text
        assert client.get(f"/api/v1/files/{file_id}").status_code == 404  # gone entirely
        contexts, summaries = world.context_calls(), world.summary_calls()
        _upload(client, "archive", "older.txt", older)  # added again: contexts are cached
    assert (world.context_calls(), world.summary_calls()) == (contexts, summaries)


def test_an_admin_changing_the_prompt_gets_new_contexts(world):
    world.app.live.update(
        {
            "contextual_prompt": "<document>\n{{WHOLE_DOCUMENT}}\n</document>"
            "\n<chunk>{{CHUNK_CONTENT}}</chunk>\nSituate it, briefly."
        }
    )
    try:
        contexts = world.context_calls()
        with world.client() as client:
            _upload(client, "archive", "report-2.md", REPORT + "\n\nSigned off.")
        assert world.context_calls() > contexts
    finally:
        world.app.live.reset()


def test_without_an_llm_it_is_refused_at_start_and_at_run_time(tmp_path, onnx_embedder):
    with pytest.raises(ConfigError, match="need an LLM"):
        Citewell.from_settings(
            Settings.load(data_dir=tmp_path / "a", contextual_chunks=True), embedder=onnx_embedder
        )
    app = Citewell.from_settings(Settings.load(data_dir=tmp_path / "b"), embedder=onnx_embedder)
    with pytest.raises(ConfigError, match="need an LLM"):
        app.live.update({"document_summary": True})
    assert app.settings.enrichment.document_summary is False
    app.close()
