"""Dify's external knowledge API (`POST /api/v1/dify/retrieval`), with requests shaped as
Dify's documentation shows them: records with content, score, title and metadata; metadata
conditions; Dify's error codes for a bad header (1001), a bad key (1002) and an unknown
knowledge id (2001); and Citewell's access: another user's KB, a KB outside a KB-limited
key and a made-up id all answer 2001, identically."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.conftest import KeyedServer, fill_kb, keyed_server, limited_key

pytestmark = pytest.mark.api

POLICY = {
    "guides/leave.md": "# Leave\n\nStaff get 25 days of paid leave a year, plus public holidays.",
    "guides/remote.md": "# Remote work\n\nEveryone may work from home two days a week.",
    "archive/leave-2019.md": "# Leave 2019\n\nIn 2019 staff had 22 days of leave a year.",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[KeyedServer]:
    data = tmp_path_factory.mktemp("dify")
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob")) as server:
        with server.client("alice") as alice:
            fill_kb(alice, "policies", POLICY)
            server.keys["alice-other-only"] = limited_key(alice, "other")
        with server.client("bob") as bob:
            bob.post("/api/v1/knowledge", json={"name": "bob-notes"})
        yield server


def retrieve(world: KeyedServer, who: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {world.keys[who]}"}
    return httpx.post(f"{world.url}/api/v1/dify/retrieval", json=body, headers=headers)


def dify_request(knowledge_id: str, query: str, **more: Any) -> dict[str, Any]:
    """The request body as Dify sends it."""
    return {
        "knowledge_id": knowledge_id,
        "query": query,
        "retrieval_setting": {"top_k": 2, "score_threshold": 0.0},
        **more,
    }


def test_records_carry_the_passage_and_where_it_is(world):
    found = retrieve(world, "alice", dify_request("policies", "How many days of paid leave?"))
    assert found.status_code == 200, found.text
    records = found.json()["records"]
    assert len(records) == 2
    best = records[0]
    assert set(best) == {"content", "score", "title", "metadata"}
    assert "25 days of paid leave" in best["content"] and best["title"] == "guides/leave.md"
    assert 0 < best["score"] <= 1 and best["score"] >= records[1]["score"]
    meta = best["metadata"]
    assert meta["path"] == "guides/leave.md" and meta["folder"] == "guides"
    assert meta["file_name"] == "leave.md" and meta["knowledge_id"]
    text = world.app.storage.text(meta["file_id"])
    assert text[meta["start"] : meta["end"]] in best["content"] or best["content"] in text
    by_id = retrieve(world, "alice", dify_request(meta["knowledge_id"], "paid leave"))
    assert by_id.json()["records"][0]["metadata"]["file_id"] == meta["file_id"]


def test_score_threshold_and_top_k_are_obeyed(world):
    body = dify_request("policies", "paid leave")
    body["retrieval_setting"] = {"top_k": 1, "score_threshold": 0.0}
    assert len(retrieve(world, "alice", body).json()["records"]) == 1
    body["retrieval_setting"] = {"top_k": 3, "score_threshold": 1.0}
    strict = retrieve(world, "alice", body).json()["records"]
    assert all(r["score"] >= 1.0 for r in strict)


def test_metadata_conditions_narrow_the_search(world):
    in_archive = dify_request(
        "policies",
        "days of leave a year",
        metadata_condition={
            "logical_operator": "and",
            "conditions": [{"name": ["folder"], "comparison_operator": "is", "value": "archive"}],
        },
    )
    records = retrieve(world, "alice", in_archive).json()["records"]
    assert [r["title"] for r in records] == ["archive/leave-2019.md"]
    either = dify_request(
        "policies",
        "days",
        metadata_condition={
            "logical_operator": "or",
            "conditions": [
                {"name": "file_name", "comparison_operator": "start with", "value": "remote"},
                {"name": "path", "comparison_operator": "contains", "value": "2019"},
            ],
        },
    )
    titles = {r["title"] for r in retrieve(world, "alice", either).json()["records"]}
    assert titles == {"guides/remote.md", "archive/leave-2019.md"}
    paged = dify_request(
        "policies",
        "leave",
        metadata_condition={
            "conditions": [{"name": "page", "comparison_operator": "≥", "value": 2}]
        },
    )
    assert retrieve(world, "alice", paged).json() == {"records": []}  # text files have no pages
    unknown = dify_request(
        "policies",
        "leave",
        metadata_condition={"conditions": [{"name": "path", "comparison_operator": "like"}]},
    )
    refused = retrieve(world, "alice", unknown)
    assert refused.status_code == 400 and "comparison_operator" in refused.json()["detail"]


def test_dify_error_codes(world):
    url = f"{world.url}/api/v1/dify/retrieval"
    body = dify_request("policies", "leave")
    for header in ({}, {"Authorization": "Token abc"}, {"Authorization": "Bearer"}):
        bad = httpx.post(url, json=body, headers=header)
        assert bad.status_code == 403 and bad.json()["error_code"] == 1001, header
    wrong = httpx.post(url, json=body, headers={"Authorization": "Bearer cw_" + "x" * 43})
    assert wrong.status_code == 403 and wrong.json()["error_code"] == 1002
    assert "error_msg" in wrong.json()


def test_what_a_key_may_not_read_is_knowledge_that_does_not_exist(world):
    policies = world.app.kb_id("policies")
    answers = [
        retrieve(world, "bob", dify_request("policies", "leave")),  # another user's, by name
        retrieve(world, "bob", dify_request(policies, "leave")),  # and by id
        retrieve(world, "alice-other-only", dify_request("policies", "leave")),  # outside key
        retrieve(world, "alice", dify_request("no-such-kb", "leave")),  # made up
    ]
    assert {a.status_code for a in answers} == {404}
    assert {a.json()["error_code"] for a in answers} == {2001}
    shapes = {
        a.json()["error_msg"].replace(policies, "X").replace("no-such-kb", "X") for a in answers
    }
    assert len({s.replace("policies", "X") for s in shapes}) == 1  # nothing tells them apart
    allowed = retrieve(world, "alice-other-only", dify_request("other", "leave"))
    assert allowed.status_code == 200 and allowed.json() == {"records": []}
