"""Sentence vectors over real HTTP: a KB that embeds its chunks' sentence pairs
(``sentence_vectors`` in its chunking) keeps them beside its chunks, searches read them,
and every way a file leaves the KB takes its pairs too. Holds for both CI passes (LanceDB,
and PostgreSQL with ``--database postgresql``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from citewell.types import ChunkFilter
from tests.api.conftest import KeyedServer, keyed_server, wait_for

PAIRS = {"sentence_vectors": True}
QUERY = "which birds nest in alder colonies by the lake"


def field_notes(topic: str, n: int = 12) -> str:
    return "\n\n".join(
        f"{topic} note {i}. Herons wade in the shallows at dawn and spear fish with their "
        "long bills. They nest in colonies high in the alders beside the lake. The young "
        "leave the nest after seven weeks."
        for i in range(n)
    )


@dataclass
class World(KeyedServer):
    pairs: str = ""  # alice's KB with sentence vectors
    plain: str = ""  # alice's KB on the server's settings
    file_id: str = ""


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[World]:
    data = tmp_path_factory.mktemp("sentence-vectors")
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob")) as server:
        w = World(**vars(server))
        with w.client("alice") as alice:
            made = alice.post(
                "/api/v1/knowledge", json={"name": "pairs", "settings": {"chunking": PAIRS}}
            )
            assert made.status_code == 201, made.text
            w.pairs = made.json()["id"]
            w.plain = alice.post("/api/v1/knowledge", json={"name": "plain"}).json()["id"]
            text = {"name": "herons.md", "content": field_notes("Heron")}
            for kb in (w.plain, w.pairs):  # the same bytes in both
                added = alice.post(f"/api/v1/knowledge/{kb}/text", json=text)
                assert added.status_code == 201, added.text
                w.file_id = added.json()["file"]["id"]
        yield w


def _pairs(world: World, kb_id: str) -> int:
    label = world.app.chunk_sets.labels.of(kb_id).label
    return int(world.app.spaces.active.sentences.count(ChunkFilter(kb_ids=(label,))))


def _chunks(world: World, kb_id: str) -> int:
    label = world.app.chunk_sets.labels.of(kb_id).label
    return int(world.app.store.count(ChunkFilter(kb_ids=(label,))))


def _search(client: httpx.Client, kbs: list[str], k: int = 50) -> list[dict]:
    body = {"collection_names": kbs, "query": QUERY, "k": k}
    response = client.post("/api/v1/retrieval/query/collection", json=body)
    assert response.status_code == 200, response.text
    return response.json()["results"]


def _settled(client: httpx.Client, kb: str) -> dict:
    return wait_for(client, f"/api/v1/knowledge/{kb}", lambda body: body["rechunk"] is None)


def test_the_kb_keeps_pairs_beside_its_chunks_and_searches_find_them(world):
    chunks, pairs = _chunks(world, world.pairs), _pairs(world, world.pairs)
    assert chunks > 0 and pairs >= 2 * chunks  # about three long sentences a chunk here
    assert _pairs(world, world.plain) == 0  # the server's setting is off
    with world.client("admin") as admin:
        stats = admin.get("/api/v1/stats/store").json()
        assert stats["sentence_pairs"] == pairs and stats["rows"] == 2 * chunks
    with world.client("alice") as alice:
        found = _search(alice, [world.pairs])
        assert len(found) == chunks and found[0]["score"] > 0
        assert all(r["sentence_score"] > 0 for r in found)  # each ranked by its best pair too
        assert all(r["sentence_score"] is None for r in _search(alice, [world.plain]))
        assert {r["knowledge_base_id"] for r in found} == {world.pairs}
        text = alice.get(f"/api/v1/files/{world.file_id}/content").text
        assert all(text[r["start"] : r["end"]] == r["text"] for r in found)  # chunks, not pairs
        both = _search(alice, [world.pairs, world.plain], k=200)
        assert _chunks(world, world.plain) == chunks  # the same splitter: the same passages,
        assert len(both) == chunks  # each shown once
        assert {r["knowledge_base_id"] for r in both} <= {world.pairs, world.plain}


def test_another_user_reads_none_of_them(world):
    with world.client("bob") as bob:
        denied = bob.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": [world.pairs], "query": QUERY, "k": 5},
        )
        assert denied.status_code in (403, 404), denied.text
        own = bob.post("/api/v1/knowledge", json={"name": "b", "settings": {"chunking": PAIRS}})
        assert own.status_code == 201, own.text
        kb = own.json()["id"]
        text = {"name": "grebes.md", "content": field_notes("Grebe", 3).replace("Heron", "Grebe")}
        assert bob.post(f"/api/v1/knowledge/{kb}/text", json=text).status_code == 201
        found = _search(bob, [kb])
        assert found and {r["file_id"] for r in found}.isdisjoint({world.file_id})


def test_turning_pairs_on_and_off_rechunks_and_drops_the_old_pairs(world):
    with world.client("alice") as alice:
        on = alice.patch(f"/api/v1/knowledge/{world.plain}", json={"settings": {"chunking": PAIRS}})
        assert on.status_code == 200, on.text
        _settled(alice, world.plain)
        assert _pairs(world, world.plain) >= 2 * _chunks(world, world.plain) > 0
        label = world.app.chunk_sets.labels.of(world.plain).label
        off = alice.patch(f"/api/v1/knowledge/{world.plain}", json={"settings": {"chunking": None}})
        assert off.status_code == 200, off.text
        _settled(alice, world.plain)
        assert _pairs(world, world.plain) == 0
        gone = ChunkFilter(kb_ids=(label,))
        wait = wait_for(alice, "/api/v1/health", lambda _: not world.app.store.count(gone))
        assert wait is not None
        assert world.app.spaces.active.sentences.count(gone) == 0
        assert _search(alice, [world.plain])
    assert world.app.check().problems == 0


def test_a_file_leaving_the_kb_takes_its_pairs(world):
    sentences = world.app.spaces.active.sentences
    with world.client("alice") as alice:
        gone = alice.delete(f"/api/v1/knowledge/{world.pairs}/files/{world.file_id}")
        assert gone.status_code in (200, 204), gone.text
        assert _pairs(world, world.pairs) == 0 and _search(alice, [world.pairs]) == []
        assert _search(alice, [world.plain])  # still there, read by its own vectors
        text = {"name": "herons.md", "content": field_notes("Heron")}
        assert alice.post(f"/api/v1/knowledge/{world.pairs}/text", json=text).status_code == 201
        assert _pairs(world, world.pairs) > 0  # made again from the stored text
        assert world.app.check().problems == 0
        for kb in (world.pairs, world.plain):
            alice.delete(f"/api/v1/knowledge/{kb}/files/{world.file_id}")
        assert world.file_id not in sentences.file_ids()
        assert world.file_id not in world.app.store.file_ids()
    assert world.app.check().problems == 0
