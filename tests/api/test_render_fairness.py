"""Page images are drawn apart from ingestion and shared fairly: bob asks four times at once
for a page built to draw slowly; two of his asks are refused (429, render_per_user), his
others run one at a time and stop at render_timeout, and alice's page image comes back
while his are still being drawn (one worker is always left for another user)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from citewell.testing.pdf_pages import Page, pdf_bytes, slow_page_pdf
from tests.api.conftest import KeyedServer, keyed_server

pytestmark = pytest.mark.api


def _upload(client: httpx.Client, kb: str, name: str, data: bytes) -> str:
    assert client.post("/api/v1/knowledge", json={"name": kb}).status_code == 201
    sent = client.post(f"/api/v1/knowledge/{kb}/files", files={"file": (name, data)})
    assert sent.status_code == 201, sent.text
    assert sent.json()["file"]["status"] == "indexed", sent.text
    return str(sent.json()["file"]["id"])


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[tuple[KeyedServer, str, str]]:
    data = tmp_path_factory.mktemp("renders")
    limits = {"render_timeout": 4.0, "render_workers": 2, "render_per_user": 2}
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob"), **limits) as server:
        page = Page()
        page.text(72, 72, "Quarterly figures: the Lobster index rose by four points.")
        with server.client("alice") as alice, server.client("bob") as bob:
            mine = _upload(alice, "alice-docs", "figures.pdf", pdf_bytes([page]))
            slow = _upload(bob, "bob-docs", "slow.pdf", slow_page_pdf())
        yield server, mine, slow


def test_one_users_slow_pages_do_not_stall_anothers(world) -> None:
    server, mine, slow = world
    with server.client("alice") as alice:  # her worker is warm, as in use
        assert alice.get(f"/api/v1/files/{mine}/pages/1/image").status_code == 200
    done: list[tuple[str, int, float, str]] = []

    def ask(who: str, file_id: str) -> None:
        with server.client(who) as client:
            answer = client.get(f"/api/v1/files/{file_id}/pages/1/image", params={"width": 1200})
        done.append((who, answer.status_code, time.monotonic(), answer.text[:300]))

    bobs = [threading.Thread(target=ask, args=("bob", slow)) for _ in range(4)]
    for thread in bobs:
        thread.start()
    time.sleep(0.5)  # bob's asks are in: two drawing or waiting, two refused
    ask("alice", mine)
    for thread in bobs:
        thread.join(60)
    alices = [d for d in done if d[0] == "alice"]
    bob_statuses = sorted(d[1] for d in done if d[0] == "bob")
    assert alices[0][1] == 200
    assert bob_statuses == [422, 422, 429, 429], done
    drawn = [d for d in done if d[0] == "bob" and d[1] == 422]
    assert all("render_timeout" in d[3] for d in drawn), drawn
    assert alices[0][2] < min(d[2] for d in drawn), "alice waited for bob's pages"
