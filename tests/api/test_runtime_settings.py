"""Admins change retrieval, reranking, chunking and prompt settings while the server runs,
over Open WebUI's /api/v1/retrieval/config routes; other users cannot."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from citewell.app import Citewell
from tests.api.conftest import KeyedServer, keyed_server

PARAGRAPH = (
    "Mallards dabble in shallow ponds for seeds and snails. They nest in reeds near the "
    "water and lead their ducklings to it within a day of hatching. "
)


def pond_notes(tag: str) -> str:
    return "".join(f"{tag} pond {i}: {PARAGRAPH}" for i in range(40))


TEMPLATE = "Use the pond notes below.\n{{CONTEXT}}\nQuestion: {{QUERY}}"


@dataclass
class World(KeyedServer):
    kb: str = ""


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[World]:
    data = tmp_path_factory.mktemp("runtime")
    with keyed_server(data, onnx_embedder, fake_llm, ("carol",)) as server:
        world = World(**vars(server))
        with world.client("admin") as c:
            world.kb = c.post("/api/v1/knowledge", json={"name": "ponds"}).json()["id"]
            text = {"name": "ponds.md", "content": pond_notes("North")}
            assert c.post(f"/api/v1/knowledge/{world.kb}/text", json=text).status_code == 201
        yield world
        with world.client("admin") as c:
            c.post("/api/v1/retrieval/config/reset", json={})


def _search(client: httpx.Client, kb: str) -> list[dict]:
    response = client.post(
        "/api/v1/retrieval/query/collection",
        json={"collection_names": [kb], "query": "where do mallards nest"},
    )
    assert response.status_code == 200, response.text
    return response.json()["results"]


def test_only_admins_read_or_change_them(world):
    with world.client("carol") as carol:
        for method, path, body in (
            ("GET", "/api/v1/retrieval/config", None),
            ("POST", "/api/v1/retrieval/config/update", {"TOP_K": 1}),
            ("POST", "/api/v1/retrieval/config/reset", {}),
        ):
            response = carol.request(method, path, json=body)
            assert response.status_code == 403, (path, response.text)
            assert response.json()["code"] == "forbidden"
    assert world.app.settings.retrieval.top_k == world.settings.retrieval.top_k


def test_open_webui_names_and_ours(world):
    with world.client("admin") as admin:
        shown = admin.get("/api/v1/retrieval/config").json()
    assert shown["status"] is True and shown["changed"] == []
    assert shown["TOP_K"] == shown["settings"]["top_k"] == world.settings.retrieval.top_k
    assert shown["CHUNK_SIZE"] == world.settings.chunking.chunk_size
    assert shown["ENABLE_RAG_HYBRID_SEARCH"] is True
    assert shown["RAG_TEMPLATE"] == world.settings.answering.rag_template


def test_a_change_takes_effect_at_once_and_is_audited(world):
    with world.client("admin") as admin:
        assert len(_search(admin, world.kb)) > 2
        response = admin.post(
            "/api/v1/retrieval/config/update", json={"TOP_K": 2, "RAG_TEMPLATE": TEMPLATE}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["changed"] == ["rag_template", "top_k"]
        assert body["start"]["top_k"] == world.settings.retrieval.top_k and body["TOP_K"] == 2
        assert len(_search(admin, world.kb)) == 2  # no restart
        chat = admin.post(
            "/api/v1/rag/chat/completions",
            json={
                "model": "llama3",
                "messages": [{"role": "user", "content": "Where do mallards nest?"}],
                "knowledge_collections": [world.kb],
            },
        )
        assert chat.status_code == 200, chat.text
        sent = world.llm.requests[-1][1]["messages"]
        assert any("Use the pond notes below." in (m["content"] or "") for m in sent)
        events = admin.get("/api/v1/audit", params={"action": "settings.update"}).json()
    assert any(e["detail"]["names"] == ["rag_template", "top_k"] for e in events)
    # Posting the same values again changes nothing and records nothing.
    with world.client("admin") as admin:
        again = admin.post("/api/v1/retrieval/config/update", json={"settings": {"top_k": 2}})
        assert again.status_code == 200
        after = admin.get("/api/v1/audit", params={"action": "settings.update"}).json()
    assert len(after) == len(events)


def test_invalid_changes_are_refused_whole(world):
    before = world.app.settings
    with world.client("admin") as admin:
        for body, code in (
            ({"TOP_K": 3, "CHUNK_OVERLAP": 10_000}, "config_invalid"),  # overlap >= size
            ({"TOP_K": "many"}, "config_invalid"),
            ({"TEXT_SPLITTER": ["character"]}, "config_invalid"),
            ({"RAG_RERANKING_ENGINE": "cross_encoder"}, "config_invalid"),  # no model dir
            ({"data_dir": "/tmp/elsewhere"}, "invalid_input"),  # only at start-up
            ({"NOT_A_SETTING": 1}, "invalid_input"),
        ):
            response = admin.post("/api/v1/retrieval/config/update", json=body)
            assert response.status_code == 400, (body, response.text)
            assert response.json()["code"] == code, (body, response.text)
        assert admin.post("/api/v1/retrieval/config/update", json=[1]).status_code == 400
    assert world.app.settings == before


def test_chunking_changes_apply_to_files_ingested_from_then_on(world):
    with world.client("admin") as admin:

        def chunks(name: str) -> int:
            text = {"name": name, "content": pond_notes(name)}
            response = admin.post(f"/api/v1/knowledge/{world.kb}/text", json=text)
            assert response.status_code == 201, response.text
            return response.json()["file"]["chunk_count"]

        before = chunks("before.md")
        change = {"CHUNK_SIZE": 200, "CHUNK_OVERLAP": 0, "TEXT_SPLITTER": "character"}
        assert admin.post("/api/v1/retrieval/config/update", json=change).status_code == 200
        after = chunks("after.md")
        admin.post("/api/v1/retrieval/config/reset", json={"names": ["chunk_size"]})
    assert after > 3 * before


def test_reranker_switched_on_and_its_key_stays_hidden(world):
    change = {
        "RAG_RERANKING_ENGINE": "external",  # Open WebUI's name for an HTTP rerank API
        "RAG_EXTERNAL_RERANKER_URL": world.reranker_url,
        "RAG_EXTERNAL_RERANKER_API_KEY": "sekrit-rerank-key",
    }
    with world.client("admin") as admin:
        shown = admin.post("/api/v1/retrieval/config/update", json=change).json()
        assert shown["settings"]["reranker"] == "http"
        assert shown["RAG_EXTERNAL_RERANKER_API_KEY"] == "********"
        assert all(r["rerank_score"] is not None for r in _search(admin, world.kb))
        # A client that posts the whole form back (masked key included) keeps the key.
        echoed = admin.post("/api/v1/retrieval/config/update", json=shown)
        assert echoed.status_code == 200, echoed.text
        assert world.app.settings.reranking.reranker_api_key == "sekrit-rerank-key"
        names = ["reranker", "reranker_url", "reranker_api_key"]
        reset = admin.post("/api/v1/retrieval/config/reset", json={"names": names})
        assert reset.status_code == 200
        assert all(r.get("rerank_score") is None for r in _search(admin, world.kb))
    assert "sekrit" not in str(shown)


def test_every_process_and_a_restart_see_the_change(world, onnx_embedder):
    other = Citewell.from_settings(world.settings, embedder=onnx_embedder)  # another process
    with world.client("admin") as admin:
        admin.post("/api/v1/retrieval/config/update", json={"RELEVANCE_THRESHOLD": 0.25})
    deadline = time.monotonic() + 10
    while other.settings.retrieval.relevance_threshold != 0.25:
        assert time.monotonic() < deadline, "the other process never saw the change"
        time.sleep(0.2)
    restarted = Citewell.from_settings(world.settings, embedder=onnx_embedder)
    assert restarted.settings.retrieval.relevance_threshold == 0.25
    with world.client("admin") as admin:
        body = admin.post("/api/v1/retrieval/config/reset", json={}).json()
    assert body["changed"] == [] and body["TOP_K"] == world.settings.retrieval.top_k
    restarted.live.refresh()
    assert restarted.settings == world.settings
    other.close()
    restarted.close()
