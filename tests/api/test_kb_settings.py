"""A knowledge base's own retrieval defaults: set by its owner (or an admin), used by every
search and answer over it unless the request says otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.api.conftest import KeyedServer, keyed_server


def notes(tag: str) -> str:
    return "".join(
        f"{tag} note {i}: Herons wade in the shallows at dawn and spear fish with their bills. "
        "They nest in colonies high in the alders beside the lake. "
        for i in range(40)
    )


@dataclass
class World(KeyedServer):
    kb: str = ""
    other: str = ""


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[World]:
    data = tmp_path_factory.mktemp("kb-settings")
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob", "carl")) as server:
        w = World(**vars(server))
        with w.client("alice") as alice:
            made = alice.post(
                "/api/v1/knowledge", json={"name": "herons", "settings": {"top_k": 2}}
            )
            assert made.status_code == 201, made.text
            w.kb = made.json()["id"]
            w.other = alice.post("/api/v1/knowledge", json={"name": "lake"}).json()["id"]
            for kb, tag in ((w.kb, "Heron"), (w.other, "Lake")):
                text = {"name": f"{tag}.md", "content": notes(tag)}
                assert alice.post(f"/api/v1/knowledge/{kb}/text", json=text).status_code == 201
            for who, permission in (("bob", "write"), ("carl", "read")):
                grant = {"principal": f"user:{who}", "permission": permission}
                assert alice.put(f"/api/v1/knowledge/{w.kb}/grants", json=grant).status_code < 300
        yield w


def _search(client: httpx.Client, kbs: list[str], **extra) -> list[dict]:
    body = {"collection_names": kbs, "query": "where do herons nest", **extra}
    response = client.post("/api/v1/retrieval/query/collection", json=body)
    assert response.status_code == 200, response.text
    return response.json()["results"]


def _patch(client: httpx.Client, kb: str, settings: dict) -> httpx.Response:
    return client.patch(f"/api/v1/knowledge/{kb}", json={"settings": settings})


def test_the_kb_default_applies_and_the_request_wins(world):
    with world.client("alice") as alice:
        assert alice.get(f"/api/v1/knowledge/{world.kb}").json()["settings"] == {"top_k": 2}
        assert len(_search(alice, [world.kb])) == 2
        assert len(_search(alice, [world.kb], k=5)) == 5
        # Over KBs whose defaults differ, the server's settings apply.
        assert len(_search(alice, [world.kb, world.other])) == world.app.settings.retrieval.top_k


def test_a_field_set_changes_only_that_field_and_null_clears_it(world):
    with world.client("alice") as alice:
        response = _patch(alice, world.kb, {"mode": "bm25"})
        assert response.status_code == 200, response.text
        assert response.json()["settings"] == {"mode": "bm25", "top_k": 2}
        found = _search(alice, [world.kb])
        assert len(found) == 2 and all(r["vector_score"] is None for r in found)
        cleared = _patch(alice, world.kb, {"mode": None, "top_k": None}).json()
        assert cleared["settings"] == {}
        assert len(_search(alice, [world.kb])) > 2
        assert _patch(alice, world.kb, {"top_k": 2}).status_code == 200


def test_only_the_owner_or_an_admin_changes_them(world):
    with world.client("bob") as bob, world.client("carl") as carl:
        renamed = bob.patch(f"/api/v1/knowledge/{world.kb}", json={"description": "birds"})
        assert renamed.status_code == 200, renamed.text  # a writer may describe it...
        refused = _patch(bob, world.kb, {"top_k": 9})  # ...but not change its settings
        assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
        assert _patch(carl, world.kb, {"top_k": 9}).status_code == 403
        assert len(_search(carl, [world.kb])) == 2  # readers get the KB's defaults
    with world.client("admin") as admin:
        assert _patch(admin, world.kb, {"relevance_threshold": 0.0}).status_code == 200
        events = admin.get("/api/v1/audit", params={"action": "kb.update"}).json()
    assert any(e["detail"].get("settings") == ["relevance_threshold"] for e in events)
    assert world.app.catalog.get_kb(world.kb).settings.top_k == 2


@pytest.mark.parametrize(
    "settings",
    [{"top_k": 0}, {"hybrid_bm25_weight": 2}, {"mode": "fuzzy"}, {"colour": "red"}, []],
)
def test_invalid_settings_are_refused(world, settings):
    with world.client("alice") as alice:
        response = _patch(alice, world.kb, settings)
        assert response.status_code == 400, response.text
        assert alice.get(f"/api/v1/knowledge/{world.kb}").json()["settings"]["top_k"] == 2


def test_a_kb_may_skip_the_servers_reranker(world):
    change = {"RAG_RERANKING_ENGINE": "external", "RAG_EXTERNAL_RERANKER_URL": world.reranker_url}
    with world.client("admin") as admin:
        assert admin.post("/api/v1/retrieval/config/update", json=change).status_code == 200
    try:
        with world.client("alice") as alice:
            assert all(r["rerank_score"] is not None for r in _search(alice, [world.kb]))
            assert _patch(alice, world.kb, {"rerank": False}).status_code == 200
            assert all(r["rerank_score"] is None for r in _search(alice, [world.kb]))
            assert all(r["rerank_score"] is not None for r in _search(alice, [world.other]))
    finally:
        with world.client("admin") as admin:
            admin.post("/api/v1/retrieval/config/reset", json={})


def test_answers_use_the_kbs_defaults(world):
    def ask(client: httpx.Client) -> dict:
        body = {
            "model": "llama3",
            "messages": [{"role": "user", "content": "Where do herons nest?"}],
            "knowledge_collections": [world.kb],
            "retrieval_trace": True,
        }
        response = client.post("/api/v1/rag/chat/completions", json=body)
        assert response.status_code == 200, response.text
        return response.json()

    with world.client("alice") as alice:
        assert len(ask(alice)["sources"]) <= 2  # top_k 2
        assert _patch(alice, world.kb, {"full_context": True}).status_code == 200
        whole = ask(alice)
        assert whole["retrieval_trace"]["mode"] == "full_context"
        assert _patch(alice, world.kb, {"full_context": None}).status_code == 200
