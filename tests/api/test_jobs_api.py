"""Queued uploads through the real server: batch upload, job and batch status, cancel and
retry errors. The server's own worker (started with it) runs the jobs."""

import pytest

from tests.api.conftest import ensure_kb, wait_for

pytestmark = pytest.mark.api


def test_a_batch_upload_is_queued_and_indexed(server):
    with server.client() as client:
        ensure_kb(client, "pond")
        files = [
            ("files", (f"note-{i}.md", f"# Pond note {i}\n\nTeal number {i} nests by the reeds."))
            for i in range(12)
        ]
        response = client.post("/api/v1/knowledge/pond/batch", files=files)
        assert response.status_code == 202, response.text
        batch = response.json()
        assert batch["total"] == 12 and not batch["done"]
        done = wait_for(client, f"/api/v1/jobs/batches/{batch['batch_id']}", lambda b: b["done"])
        assert done["counts"] == {"indexed": 12}
        assert all(j["file_id"] and j["error"] is None for j in done["jobs"])
        hits = client.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": ["pond"], "query": "teal number 7 nests", "k": 1},
        ).json()
        assert "Teal number 7" in hits["documents"][0][0]
        listed = client.get("/api/v1/jobs", params={"batch_id": batch["batch_id"]}).json()
        assert len(listed) == 12


def test_wait_false_answers_202_with_the_job(server):
    with server.client() as client:
        ensure_kb(client, "pond")
        response = client.post(
            "/api/v1/knowledge/pond/files",
            params={"wait": "false"},
            files={"file": ("heron.md", b"# Heron\n\nThe grey heron waits still in the shallows.")},
        )
        assert response.status_code == 202, response.text
        job = response.json()
        assert job["state"] in ("queued", "parsing", "embedding", "indexed")
        done = wait_for(client, f"/api/v1/jobs/{job['id']}", lambda j: j["finished_at"])
        assert done["state"] == "indexed"
        retry = client.post(f"/api/v1/jobs/{job['id']}/retry")
        assert retry.status_code == 400 and "only failed or cancelled" in retry.json()["detail"]


def test_a_failed_job_says_why(server):
    with server.client() as client:
        ensure_kb(client, "pond")
        job = client.post(
            "/api/v1/knowledge/pond/files",
            params={"wait": "false"},
            files={"file": ("broken.pdf", b"%PDF-1.7 this is not a PDF")},
        ).json()
        done = wait_for(client, f"/api/v1/jobs/{job['id']}", lambda j: j["finished_at"])
        assert done["state"] == "failed" and done["error_code"] == "parse_failed"
        assert done["attempts"] == 1 and done["error"]


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("get", "/api/v1/jobs/nope", 404, "job_not_found"),
        ("post", "/api/v1/jobs/nope/cancel", 404, "job_not_found"),
        ("get", "/api/v1/jobs/batches/nope", 404, "job_not_found"),
        ("post", "/api/v1/jobs/batches/nope/cancel", 404, "job_not_found"),
        ("get", "/api/v1/jobs?state=sleeping", 400, "invalid_input"),
    ],
)
def test_job_errors(server, method, path, status, code):
    with server.client() as client:
        response = getattr(client, method)(path)
    assert response.status_code == status and response.json()["code"] == code


def read_events(response):
    """(event, data) pairs from a server-sent event stream."""
    import json

    name = None
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


def test_batch_progress_streams_as_server_sent_events(server):
    with server.client() as client:
        ensure_kb(client, "events")
        files = [("files", (f"e{i}.md", f"# Egret {i}\n\nEgret {i} fishes.")) for i in range(5)]
        batch = client.post("/api/v1/knowledge/events/batch", files=files).json()
        states: dict[str, str] = {}
        progress = []
        with client.stream("GET", f"/api/v1/jobs/batches/{batch['batch_id']}/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for name, data in read_events(stream):
                if name == "job":
                    states[data["id"]] = data["state"]
                elif name == "progress":
                    progress.append(data)
                elif name == "done":
                    break
        assert set(states.values()) == {"indexed"} and len(states) == 5
        assert progress[-1]["finished"] == progress[-1]["total"] == 5
        with client.stream(
            "GET", "/api/v1/jobs/events", params={"knowledge_base": "events"}
        ) as stream:
            first = next(read_events(stream))
        assert first[0] == "job" and first[1]["knowledge_base_id"]
