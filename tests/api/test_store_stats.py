"""Admins read what the chunk store holds, how its vector index is laid out (and, when
asked, its measured recall) and how this process's in-memory KB copies serve searches
(GET /api/v1/stats/store); other users cannot."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from citewell.stores.lance.store import LanceChunkStore
from citewell.stores.registry import table_copy_budget_mb
from tests.api.conftest import KeyedServer, keyed_server

PARAGRAPH = (
    "Grey herons stand still in the shallows for minutes at a time, then strike at fish, "
    "frogs and the odd vole with a quick stab of the bill. They nest in colonies high in "
    "trees and return to the same heronry year after year. "
)
NOTES = "".join(f"## Note {i}\n\n{PARAGRAPH * 3}\n\n" for i in range(12))
INDEX_FROM = 8  # vector_index_min_rows: the notes make more chunks, so the table is "big"


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[KeyedServer]:
    data = tmp_path_factory.mktemp("stats")
    with keyed_server(
        data, onnx_embedder, fake_llm, ("carol",), vector_index_min_rows=INDEX_FROM
    ) as server:
        with server.client("admin") as admin:
            kb = admin.post("/api/v1/knowledge", json={"name": "herons"}).json()["id"]
            text = {"name": "herons.md", "content": NOTES}
            assert admin.post(f"/api/v1/knowledge/{kb}/text", json=text).status_code == 201
        yield server


def test_admins_see_rows_index_and_kb_copies(world):
    with world.client("admin") as admin:
        response = admin.get("/api/v1/stats/store")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["store"] == type(world.app.store).__name__
    assert body["rows"] >= INDEX_FROM and body["index"]["rows"] == body["rows"]
    assert body["sentence_pairs"] == 0  # sentence_vectors is off
    assert body["index"]["recall_at_50"] is None  # not asked for
    if isinstance(world.app.store, LanceChunkStore):
        assert body["index"]["vector_index"] not in ("none", "exact (in memory)")
        assert body["index"]["trained_rows"] > 0
        assert body["index"]["training_rows"] == 0  # no training under way in the background
        assert body["index"]["rows_behind"] == 0  # the upload's upkeep took its rows in
    else:  # CI's second pass of this tier keeps everything in PostgreSQL
        assert body["index"]["vector_index"] == "pgvector HNSW (cosine)"
    copies = body["kb_copies"]  # either store keeps copies of single small KBs
    assert copies["budget_mb"] == world.settings.storage.kb_snapshot_mb
    assert copies["copies"] == 0  # the one KB holds the whole table: no copy is made
    # Either store copies a big table into memory (the machine's one, shared).
    whole = body["table_copy"]  # table_copy_mb "auto": a share of this machine's memory
    assert world.settings.storage.table_copy_mb == "auto"
    assert whole["budget_mb"] == table_copy_budget_mb(world.settings) > whole["needed_mb"]
    assert whole["needed_mb"] > 0  # the table is past the ANN threshold
    # Written moments ago: the copy waits for 20 s without writes (or is made, or held).
    assert whole["state"] in ("waiting", "copying", "current")
    assert (whole["state"] == "current") == whole["current"]


def test_the_server_loads_what_its_searches_read(world):
    """A serving process warms its search handle at start (commands and job workers do
    not: test_lance_upkeep.py)."""
    store = world.app.store
    if isinstance(store, LanceChunkStore):
        assert store._search._warmed and store._search.wait(30)
    else:  # PostgreSQL keeps no per-process index cache to load
        assert not hasattr(store, "warm_searches")


def test_recall_is_measured_only_when_asked_and_bounded(world):
    with world.client("admin") as admin:
        measured = admin.get("/api/v1/stats/store", params={"recall_samples": 3}).json()
        too_many = admin.get("/api/v1/stats/store", params={"recall_samples": 5000})
    assert measured["index"]["recall_samples"] == 3
    assert 0 < measured["index"]["recall_at_50"] <= 1
    assert too_many.status_code == 400
    assert "recall_samples" in too_many.text


def test_other_users_may_not_read_them(world):
    with world.client("carol") as carol:
        response = carol.get("/api/v1/stats/store")
    assert response.status_code == 403


def test_readiness_waits_for_the_first_copy_of_a_big_table(tmp_path, onnx_embedder, fake_llm):
    """A process with a big table and no copy of it yet is not ready: a balancer would
    send it searches that read the store at twice a copy's time. Ready once it has one."""
    with keyed_server(
        tmp_path, onnx_embedder, fake_llm, (), vector_index_min_rows=INDEX_FROM
    ) as server:
        with server.client("admin") as admin:
            kb = admin.post("/api/v1/knowledge", json={"name": "herons"}).json()["id"]
            text = {"name": "herons.md", "content": NOTES}
            assert admin.post(f"/api/v1/knowledge/{kb}/text", json=text).status_code == 201
        with httpx.Client(base_url=server.url, timeout=60) as anyone:  # no key needed
            waiting = anyone.get("/readyz")  # the copy waits for 20 s without writes
            assert waiting.status_code == 503, waiting.text
            assert waiting.json()["status"] == "starting"
            assert waiting.json()["table_copy"] in ("waiting", "copying")
            server.app.store._snapshots._quiet = 0.0  # as if the 20 s had passed
            deadline = time.monotonic() + 30
            while (ready := anyone.get("/readyz")).status_code != 200:
                assert time.monotonic() < deadline, ready.text
                time.sleep(0.1)
            assert ready.json()["status"] == "ready"
        with server.client("admin") as admin:
            assert admin.get("/api/v1/stats/store").json()["table_copy"]["current"]
