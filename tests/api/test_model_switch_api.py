"""Changing the embedding model of a running installation, through the real server: the first
server ingests with one model, the second starts with another of a different dimension and
re-embeds in the background while a client keeps querying. Both models are served by local
OpenAI-compatible embedding endpoints (FakeService, a wire-format fake named as such)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from citewell.config import Settings
from tests.api.conftest import run_server, wait_for
from tests.fake_servers import FakeService, serve

pytestmark = pytest.mark.api

FILES = [
    ("files", (f"wader-{i}.md", f"# Wader {i}\n\nThe wader number {i} probes mud{i} for worms{i}."))
    for i in range(120)
]


def model_settings(data, url: str, model: str) -> Settings:
    return Settings.load(
        data_dir=data,
        auth="none",
        embedding_engine="openai",
        embedding_base_url=url + "/v1",
        embedding_model=model,
        job_batch_files=16,
    )


class QueryLoad:
    """A client that queries without pause until stopped, keeping every answer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers: list[tuple[int, int]] = []  # (status, results)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> QueryLoad:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            i = 0
            while not self._stop.is_set():
                i += 1
                response = client.post(
                    "/api/v1/retrieval/query/collection",
                    json={"collection_names": ["waders"], "query": f"mud{i % 120} worms", "k": 3},
                )
                found = len(response.json()["documents"][0]) if response.status_code == 200 else 0
                self.answers.append((response.status_code, found))


def test_a_model_change_reembeds_while_queries_keep_answering(tmp_path):
    old, new = FakeService(dimension=48), FakeService(dimension=24, delay=0.05)
    data = tmp_path / "data"
    with serve(old) as old_url, serve(new) as new_url:
        with (
            run_server(model_settings(data, old_url, "model-a"), None) as url,
            httpx.Client(base_url=url, timeout=60) as client,
        ):
            client.post("/api/v1/knowledge", json={"name": "waders"})
            batch = client.post("/api/v1/knowledge/waders/batch", files=FILES).json()
            path = f"/api/v1/jobs/batches/{batch['batch_id']}"
            assert wait_for(client, path, lambda b: b["done"])["counts"] == {"indexed": 120}

        ingested = len(old.requests)
        with run_server(model_settings(data, new_url, "model-b"), None) as url:
            with httpx.Client(base_url=url, timeout=60) as client, QueryLoad(url) as load:
                status = client.get("/api/v1/embedding").json()
                assert status["active"]["model_id"] == "openai:model-a"
                assert status["active"]["dimension"] == 48
                switch = status["switch"]
                assert switch["model_id"] == "openai:model-b" and switch["dimension"] == 24
                assert switch["total"] == 120 and not switch["stalled"]
                added = client.post(
                    "/api/v1/knowledge/waders/files",
                    files={"file": ("stilt.md", b"# Stilt\n\nStilts wade on long pink legs.")},
                )
                assert added.status_code == 201, added.text
                during = len(load.answers)
                # The switch's end and this process taking up the new space are a refresh
                # apart (spaces.REFRESH_EVERY): wait for both.
                done = wait_for(
                    client,
                    "/api/v1/embedding",
                    lambda s: s["switch"] is None and s["active"]["dimension"] == 24,
                )
                time.sleep(0.5)  # and some queries in the new space
                hits = client.post(
                    "/api/v1/retrieval/query/collection",
                    json={"collection_names": ["waders"], "query": "stilts pink legs", "k": 1},
                ).json()
            assert len(load.answers) > during > 0
            assert {status for status, _ in load.answers} == {200}  # zero errors
            assert all(found == 3 for _, found in load.answers)
            assert done["active"]["dimension"] == 24 and done["chunks"] == 121
            assert "Stilts wade" in hits["documents"][0][0]
    # Queries were embedded by the old model until the switch, then by the new one.
    assert queries(old.requests[ingested:]) and queries(new.requests)


def queries(requests) -> list[str]:
    return [b["input"][0] for _, b in requests if b["input"][0].endswith(" worms")]
