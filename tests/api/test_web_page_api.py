"""What the web page needs from the server: the page and its files with their security
headers, file sections for the viewer, a search mode per request, and the settings page."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from citewell.api.app import create_app
from citewell.config import Settings
from tests.api.conftest import ensure_kb, upload

pytestmark = pytest.mark.api


def test_the_page_and_its_scripts_are_served_under_a_strict_csp(extractive_server):
    with extractive_server.client() as client:
        page = client.get("/")
        script = client.get("/ui/app.js")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert '<script type="module" src="/ui/app.js">' in page.text
    for response in (page, script):
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert response.headers["x-content-type-options"] == "nosniff"
    assert "javascript" in script.headers["content-type"]
    assert "innerHTML" not in script.text  # text from the server only ever becomes text nodes


def test_without_web_ui_there_is_no_page(tmp_path, onnx_embedder):
    from citewell.app import Citewell

    settings = Settings.load(data_dir=tmp_path, auth="none", web_ui=False)
    app = create_app(settings, Citewell.from_settings(settings, embedder=onnx_embedder))
    with TestClient(app) as client:  # in-process: no port needed to see a route is absent
        assert client.get("/").status_code == 404
        assert client.get("/ui/app.js").status_code == 404
        assert client.get("/healthz").status_code == 200


def test_file_text_says_where_pages_lie(extractive_server, shared_docs):
    with extractive_server.client() as client:
        ensure_kb(client, "pages")
        file = upload(client, "pages", shared_docs / "multi_page.pdf")["file"]
        body = client.get(f"/api/v1/files/{file['id']}/text").json()
    sections = body["sections"]
    assert [s["page"] for s in sections][:1] == [1] and sections[-1]["page"] >= 4
    assert all(0 <= s["start"] < s["end"] <= len(body["text"]) for s in sections)
    assert all(a["end"] <= b["start"] for a, b in zip(sections, sections[1:], strict=False))


def test_each_search_mode_can_be_asked_for(extractive_server, shared_docs):
    with extractive_server.client() as client:
        ensure_kb(client, "modes")
        upload(client, "modes", shared_docs / "wiki_duck.html")
        query = {"collection_names": ["modes"], "query": "mallard", "k": 5}
        found = {
            mode: client.post(
                "/api/v1/retrieval/query/collection", json={**query, "mode": mode}
            ).json()["results"]
            for mode in ("bm25", "vector", "hybrid")
        }
        bad = client.post("/api/v1/retrieval/query/collection", json={**query, "mode": "fuzzy"})
    assert all(r["bm25_score"] is not None and r["vector_score"] is None for r in found["bm25"])
    assert all(r["vector_score"] is not None and r["bm25_score"] is None for r in found["vector"])
    assert all(r["vector_score"] is not None for r in found["hybrid"])
    assert bad.status_code == 400


def test_a_streamed_extractive_answer_says_so_in_its_first_chunk(extractive_server, shared_docs):
    with extractive_server.client() as client:
        ensure_kb(client, "stream")
        upload(client, "stream", shared_docs / "wiki_duck.html")
        body = {
            "model": "citewell-extractive",
            "knowledge_collections": ["stream"],
            "messages": [{"role": "user", "content": "What do ducks eat?"}],
            "stream": True,
        }
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            first = next(line for line in response.iter_lines() if line.startswith("data: "))
    chunk = json.loads(first.removeprefix("data: "))
    assert chunk["extractive"] is True and chunk["sources"]


def test_admins_read_the_effective_settings(extractive_server):
    with extractive_server.client() as client:
        shown = client.get("/api/v1/settings").json()
    assert shown["auth"] == "none" and shown["web_ui"] is True
    assert shown["llm_api_key"] in ("", "********")
