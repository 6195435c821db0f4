"""Knowledge bases and files over real HTTP."""

import pytest

from tests.api.conftest import ensure_kb, upload

pytestmark = pytest.mark.api


def search(client, kb, query, k=10):
    response = client.post(
        "/api/v1/retrieval/query/collection",
        json={"collection_names": [kb], "query": query, "k": k},
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_kb_crud(server):
    with server.client() as c:
        created = ensure_kb(c, "crud-kb")
        assert created["name"] == "crud-kb" and created["files"] == []
        assert any(kb["id"] == created["id"] for kb in c.get("/api/v1/knowledge").json())
        renamed = c.patch(
            f"/api/v1/knowledge/{created['id']}", json={"name": "crud-renamed", "description": "d"}
        ).json()
        assert renamed["name"] == "crud-renamed" and renamed["description"] == "d"
        assert c.get("/api/v1/knowledge/crud-renamed").json()["id"] == created["id"]
        assert c.delete(f"/api/v1/knowledge/{created['id']}").status_code == 204
        gone = c.get(f"/api/v1/knowledge/{created['id']}")
        assert gone.status_code == 404 and gone.json()["code"] == "knowledge_base_not_found"


def test_upload_dedupe_link_and_delete(server, shared_docs, copy_file):
    with server.client() as c:
        ensure_kb(c, "docs-a")
        ensure_kb(c, "docs-b")
        first = upload(c, "docs-a", shared_docs / "wiki_duck.html")
        assert first["chunks_embedded"] > 0 and first["file"]["status"] == "indexed"
        again = upload(c, "docs-a", shared_docs / "wiki_duck.html")
        assert again["unchanged"] and again["chunks_embedded"] == 0
        renamed = copy_file(shared_docs / "wiki_duck.html", "birds.html")
        linked = upload(c, "docs-b", renamed)
        assert linked["linked"] and linked["chunks_embedded"] == 0
        assert linked["file"]["id"] == first["file"]["id"]
        file_id = first["file"]["id"]
        assert search(c, "docs-b", "duck")["results"]

        assert c.delete(f"/api/v1/knowledge/docs-b/files/{file_id}").status_code == 204
        assert search(c, "docs-b", "duck")["results"] == []
        assert search(c, "docs-a", "duck")["results"]  # still in the other KB

        added = c.post(f"/api/v1/knowledge/docs-b/files/{file_id}")
        assert added.status_code == 201 and added.json()["file_count"] == 1
        assert search(c, "docs-b", "duck")["results"]

        assert c.delete(f"/api/v1/files/{file_id}").status_code == 204
        for kb in ("docs-a", "docs-b"):
            assert search(c, kb, "duck")["results"] == []
        assert c.get(f"/api/v1/files/{file_id}").status_code == 404
        assert file_id not in {f["id"] for f in c.get("/api/v1/files").json()}


def test_raw_text_and_query_doc(server):
    with server.client() as c:
        ensure_kb(c, "notes")
        body = {"name": "policy.md", "content": "# Leave\n\nParental leave lasts 16 weeks."}
        made = c.post("/api/v1/knowledge/notes/text", json=body)
        assert made.status_code == 201, made.text
        file_id = made.json()["file"]["id"]
        found = c.post(
            "/api/v1/retrieval/query/doc",
            json={"collection_name": file_id, "query": "parental leave", "k": 3},
        )
        result = found.json()
        assert result["documents"][0][0].endswith("16 weeks.")
        assert result["metadatas"][0][0]["file_id"] == file_id
        text = c.get(f"/api/v1/files/{file_id}/text").json()["text"]
        meta = result["metadatas"][0][0]
        assert text[meta["start"] : meta["end"]] == result["documents"][0][0]
        strict = c.post(
            "/api/v1/retrieval/query/doc",
            json={"collection_name": file_id, "query": "lunch menu", "r": 0.99},
        )
        assert strict.json()["documents"] == [[]]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("get", "/api/v1/knowledge/nope", {}, 404, "knowledge_base_not_found"),
        ("post", "/api/v1/knowledge", {"json": {"name": ""}}, 400, "invalid_input"),
        ("post", "/api/v1/knowledge", {"json": {}}, 400, "invalid_input"),
        ("get", "/api/v1/files/abc", {}, 404, "file_not_found"),
        ("delete", "/api/v1/files/abc", {}, 404, "file_not_found"),
        (
            "post",
            "/api/v1/retrieval/query/collection",
            {"json": {"collection_names": ["nope"], "query": "x"}},
            404,
            "knowledge_base_not_found",
        ),
        ("get", "/no/such/route", {}, 404, "not_found"),
    ],
)
def test_errors_have_one_shape(server, method, path, kwargs, status, code):
    with server.client() as c:
        response = getattr(c, method)(path, **kwargs)
    assert response.status_code == status
    body = response.json()
    assert set(body) == {"detail", "code"} and body["code"] == code and body["detail"]


@pytest.mark.parametrize(
    ("name", "data", "status", "code"),
    [
        ("random.pdf", b"%PDF-1.4 not really a pdf", 422, "parse_failed"),
        ("empty.txt", b"", 422, "parse_failed"),
        ("blob.bin", bytes(range(256)) * 16, 415, "unsupported_format"),
    ],
)
def test_bad_uploads_are_4xx_and_leave_nothing_behind(server, name, data, status, code):
    with server.client() as c:
        ensure_kb(c, "bad-uploads")
        before = c.get("/api/v1/files").json()
        response = c.post("/api/v1/knowledge/bad-uploads/files", files={"file": (name, data)})
        assert response.status_code == status and response.json()["code"] == code
        assert c.get("/api/v1/files").json() == before
