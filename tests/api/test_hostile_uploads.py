"""The hostile-input set through HTTP: each file gets a 4xx (never a 5xx, never a hang), and
the knowledge base it was aimed at keeps working."""

import pytest

from tests.api.conftest import ensure_kb, upload
from tests.hostile import HOSTILE, huge_text

pytestmark = pytest.mark.api


def search_names(client, kb, query):
    response = client.post(
        "/api/v1/retrieval/query/collection",
        json={"collection_names": [kb], "query": query, "k": 5},
    )
    assert response.status_code == 200, response.text
    return {m["name"] for m in response.json()["metadatas"][0]}


def test_hostile_set_is_refused_and_the_kb_is_unharmed(server, shared_docs):
    with server.client() as c:
        ensure_kb(c, "hostile")
        upload(c, "hostile", shared_docs / "fake-memo.pdf")
        for name, make, error in HOSTILE:
            response = c.post("/api/v1/knowledge/hostile/files", files={"file": (name, make())})
            if error is None:
                assert response.status_code == 201, (name, response.text)
            else:
                assert 400 <= response.status_code < 500, (name, response.text)
                assert response.json()["code"] == "parse_failed", name
        assert "fake-memo.pdf" in search_names(c, "hostile", "bottles of water delivered")
        names = {f["name"] for f in c.get("/api/v1/knowledge/hostile").json()["files"]}
        assert names == {"fake-memo.pdf", "deep.html"}


def test_200_mb_text_upload_is_413(server):
    with server.client() as c:
        ensure_kb(c, "hostile-big")
        response = c.post(
            "/api/v1/knowledge/hostile-big/files", files={"file": ("huge.txt", huge_text(200))}
        )
        assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
        assert c.get("/api/v1/knowledge/hostile-big").json()["files"] == []
