"""A knowledge base's own chunking, over real HTTP: its files get a chunk set of their own
(the same bytes in a KB on the server's chunking keep the shared set), and a change
re-chunks the KB in the job queue while searches read the old set until the swap."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from statistics import mean

import httpx
import pytest

from tests.api.conftest import KeyedServer, keyed_server, wait_for

SMALL = {"text_splitter": "character", "chunk_size": 200, "chunk_overlap": 0}
MEDIUM = {"text_splitter": "token", "chunk_size": 96, "chunk_overlap": 0}


def guide(topic: str) -> str:
    return "\n\n".join(
        f"{topic} paragraph {i}. Herons wade in the shallows at dawn and spear fish with their "
        "long bills, then rest on one leg. They nest in colonies high in the alders beside the "
        "lake, and the young leave the nest after seven weeks."
        for i in range(30)
    )


@dataclass
class World(KeyedServer):
    fine: str = ""  # own chunking (SMALL)
    plain: str = ""  # the server's chunking
    file_id: str = ""


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[World]:
    data = tmp_path_factory.mktemp("kb-chunking")
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob")) as server:
        w = World(**vars(server))
        with w.client("alice") as alice:
            made = alice.post(
                "/api/v1/knowledge", json={"name": "fine", "settings": {"chunking": SMALL}}
            )
            assert made.status_code == 201, made.text
            w.fine = made.json()["id"]
            w.plain = alice.post("/api/v1/knowledge", json={"name": "plain"}).json()["id"]
            text = {"name": "herons.md", "content": guide("Heron")}
            for kb in (w.plain, w.fine):  # the same bytes: stored once, chunked twice
                added = alice.post(f"/api/v1/knowledge/{kb}/text", json=text)
                assert added.status_code == 201, added.text
                w.file_id = added.json()["file"]["id"]
            grant = {"principal": "user:bob", "permission": "write"}
            assert alice.put(f"/api/v1/knowledge/{w.fine}/grants", json=grant).status_code < 300
        yield w


def _search(client: httpx.Client, kbs: list[str], k: int = 200) -> list[dict]:
    body = {"collection_names": kbs, "query": "where do herons nest", "k": k}
    response = client.post("/api/v1/retrieval/query/collection", json=body)
    assert response.status_code == 200, response.text
    return response.json()["results"]


def _ids(results: list[dict]) -> list[str]:
    return sorted(r["chunk_id"] for r in results)


def _lengths(results: list[dict]) -> list[int]:
    return [r["end"] - r["start"] for r in results]


def _settled(client: httpx.Client, kb: str) -> dict:
    return wait_for(client, f"/api/v1/knowledge/{kb}", lambda body: body["rechunk"] is None)


def test_a_kb_with_its_own_chunking_reads_its_own_chunks(world):
    with world.client("alice") as alice:
        assert alice.get(f"/api/v1/knowledge/{world.fine}").json()["settings"] == {
            "chunking": SMALL
        }
        fine, plain = _search(alice, [world.fine]), _search(alice, [world.plain])
        assert max(_lengths(fine)) <= 200 < max(_lengths(plain))
        assert len(fine) > len(plain)
        assert {r["knowledge_base_id"] for r in fine} == {world.fine}
        assert {r["file_id"] for r in fine + plain} == {world.file_id}
        # Offsets of both sets point into the one stored text.
        text = alice.get(f"/api/v1/files/{world.file_id}/content").text
        assert all(text[r["start"] : r["end"]] == r["text"] for r in fine + plain)
        # Both KBs at once: each read its own set, and each result says which.
        both = _search(alice, [world.fine, world.plain])
        assert len(both) == len(fine) + len(plain)
        # One file searched by id reads one set, not one per chunking.
        one = alice.post(
            "/api/v1/retrieval/query/doc",
            json={"collection_name": world.file_id, "query": "herons", "k": 200},
        ).json()["results"]
        assert len(one) == len(plain)


def test_the_estimate_splits_as_the_kb_would(world):
    files = {"files": ("herons.md", guide("Heron").encode())}
    with world.client("alice") as alice:
        counts = {
            kb: alice.post(f"/api/v1/knowledge/{kb}/files/estimate", files=files).json()["chunks"]
            for kb in (world.fine, world.plain)
        }
    assert counts[world.fine] > counts[world.plain] > 0


def test_only_the_owner_changes_chunking_and_bad_values_change_nothing(world):
    with world.client("bob") as bob:
        denied = bob.patch(f"/api/v1/knowledge/{world.fine}", json={"settings": {"chunking": {}}})
        assert denied.status_code == 403
    with world.client("alice") as alice:
        for bad in ({"chunk_size": -5}, {"embedding_model": "x"}, {"text_splitter": "nope"}):
            response = alice.patch(
                f"/api/v1/knowledge/{world.fine}", json={"settings": {"chunking": bad}}
            )
            assert response.status_code == 400, response.text
        kb = alice.get(f"/api/v1/knowledge/{world.fine}").json()
        assert kb["settings"] == {"chunking": SMALL} and kb["rechunk"] is None


def test_a_change_rechunks_in_the_job_queue_then_swaps(world):
    with world.client("alice") as alice:
        before = _search(alice, [world.plain])
        changed = alice.patch(
            f"/api/v1/knowledge/{world.plain}", json={"settings": {"chunking": MEDIUM}}
        )
        assert changed.status_code == 200, changed.text
        rechunk = changed.json()["rechunk"]
        assert rechunk is None or rechunk["files"] == 1
        _settled(alice, world.plain)
        jobs = alice.get("/api/v1/jobs", params={"kb_id": world.plain}).json()
        assert [(j["operation"], j["state"]) for j in jobs if j["operation"] == "rechunk"] == [
            ("rechunk", "indexed")
        ]
        after = _search(alice, [world.plain])
        assert mean(_lengths(after)) < mean(_lengths(before))
        assert {r["chunk_id"] for r in after}.isdisjoint(r["chunk_id"] for r in before)
        # Back to the server's chunking: the shared set again, same chunks as before.
        assert (
            alice.patch(
                f"/api/v1/knowledge/{world.plain}", json={"settings": {"chunking": None}}
            ).status_code
            == 200
        )
        _settled(alice, world.plain)
        again = _search(alice, [world.plain])
        assert sorted(r["chunk_id"] for r in again) == sorted(r["chunk_id"] for r in before)
    report = world.app.check()
    assert report.problems == 0, report


def test_removing_the_file_from_one_kb_keeps_the_other_set(world):
    with world.client("alice") as alice:
        fine_before = _search(alice, [world.fine])
        gone = alice.delete(f"/api/v1/knowledge/{world.plain}/files/{world.file_id}")
        assert gone.status_code in (200, 204), gone.text
        assert _search(alice, [world.plain]) == []
        # The same chunks (scores may move: BM25's statistics cover the whole store).
        assert _ids(_search(alice, [world.fine])) == _ids(fine_before)
        text = {"name": "herons.md", "content": guide("Heron")}
        assert alice.post(f"/api/v1/knowledge/{world.plain}/text", json=text).status_code == 201
        assert _search(alice, [world.plain])  # the shared set made again from stored text
    report = world.app.check()
    assert report.problems == 0, report


def test_check_finds_a_missing_own_set_and_repair_rebuilds_it(world):
    from citewell.types import ChunkFilter

    label = world.app.chunk_sets.labels.of(world.fine).label
    with world.client("alice") as alice:
        before = _ids(_search(alice, [world.fine]))
        world.app.store.delete(ChunkFilter(kb_ids=(label,)))  # as if a re-chunk missed it
        assert _search(alice, [world.fine]) == []
        report = world.app.check()
        assert list(report.missing_chunks) == [world.file_id]
        world.app.check(repair=True)
        assert _ids(_search(alice, [world.fine])) == before
    assert world.app.check().problems == 0


def test_deleting_a_kb_deletes_its_own_chunks(world):
    from citewell.types import ChunkFilter

    label = world.app.chunk_sets.labels.of(world.fine).label
    assert label.startswith(f"{world.fine}~")
    assert world.app.store.count(ChunkFilter(kb_ids=(label,))) > 0
    with world.client("alice") as alice:
        assert alice.delete(f"/api/v1/knowledge/{world.fine}").status_code == 204
        assert world.app.store.count(ChunkFilter(kb_ids=(label,))) == 0
        assert _search(alice, [world.plain])  # the file stays where it still is
    report = world.app.check()
    assert report.problems == 0, report
