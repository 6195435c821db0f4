"""A folder connector on a server is watched: a file added, changed or deleted in the folder
reaches search without anyone asking for a sync (the server's job worker watches the folders
of its folder connectors; connector_watch)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import KeyedServer, keyed_server

pytestmark = pytest.mark.api


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[tuple[KeyedServer, Path]]:
    shares = tmp_path_factory.mktemp("watched")
    (shares / "notes").mkdir()
    (shares / "notes" / "first.md").write_text("The first note mentions the Albatross plan.")
    data = tmp_path_factory.mktemp("watch-server")
    with keyed_server(
        data, onnx_embedder, fake_llm, ("alice",), connector_allowed_paths=f"{shares}=alice"
    ) as server:
        yield server, shares


def found(client: httpx.Client, kb: str, query: str) -> str:
    body = client.post(
        "/api/v1/retrieval/query/collection",
        json={"collection_names": [kb], "query": query, "k": 5},
    ).json()
    return " ".join(text for group in body["documents"] for text in group)


def eventually(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Polls ``check``; the timeout only keeps a broken watch from hanging the suite
    (the latency target lives in benchmarks/watch_latency.py)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not seen: {what}"
        time.sleep(0.2)


def test_changes_in_a_watched_folder_reach_search(world) -> None:
    server, shares = world
    folder = shares / "notes"
    with server.client("alice") as alice:
        kb = alice.post("/api/v1/knowledge", json={"name": "watched"}).json()["id"]
        made = alice.post(
            f"/api/v1/knowledge/{kb}/connectors",
            json={"kind": "folder", "target": str(folder), "interval": 3600},
        )
        assert made.status_code == 201, made.text
        eventually(lambda: "Albatross" in found(alice, kb, "Albatross plan"), "the first sync")
        # No wait for the watch to begin: what changes before it does is synced when it does.

        (folder / "added.md").write_text("An added note about the Cormorant budget.")
        eventually(lambda: "Cormorant" in found(alice, kb, "Cormorant budget"), "an added file")
        (folder / "first.md").write_text("The first note now mentions the Heron plan.")
        eventually(lambda: "Heron" in found(alice, kb, "Heron plan"), "a changed file")
        assert "Albatross" not in found(alice, kb, "Albatross plan")
        (folder / "added.md").unlink()
        eventually(lambda: "Cormorant" not in found(alice, kb, "Cormorant budget"), "a delete")
        files = alice.get(f"/api/v1/knowledge/{kb}").json()["files"]
        assert [f["name"] for f in files] == ["first.md"]
        # Nothing but the watch synced: the schedule's next run is an hour away.
        status = alice.get(f"/api/v1/knowledge/{kb}/connectors/{made.json()['id']}").json()
        assert status["next_run_at"] > time.time() + 3000
    assert not server.app.check(recall_samples=0).problems
