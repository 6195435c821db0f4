"""The access matrix: a real server with auth required. Bob, an anonymous caller, a bad key and
Alice's own key limited to another KB try to list, search, chat against, download and cite
Alice's private KB through every endpoint: each gets 401/403/404 or an answer without a single
chunk of it, also through a model preset that binds her KB. The fake LLM (a wire-format fake
of an OpenAI-compatible server) records what it was sent, so leaks into prompts count too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from openai import AuthenticationError, OpenAI

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.auth.grants import GrantStore
from citewell.config import Settings
from citewell.engine.scoped import Scoped
from citewell.types import ChunkFilter
from tests.api.conftest import run_server
from tests.fake_servers import FakeLLMService

SECRET = "Quokkazanzibar"  # a word only Alice's document has
ALICE_DOC = (
    f"# Merger plan\n\nProject {SECRET} acquires the duck pond company for nine million "
    "euros. Ducks eat plants, seeds and small animals near the pond."
)
BOB_DOC = "# Pond notes\n\nDucks eat plants and insects. Geese graze on grass."


@dataclass
class World:
    url: str
    app: Citewell
    llm: FakeLLMService
    keys: dict[str, str]
    alice_kb: dict[str, Any]
    other_kb: dict[str, Any]
    bob_kb: dict[str, Any]
    file_id: str
    job_id: str

    def client(self, who: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"} if who in self.keys else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


def _admin_key(app: Citewell) -> str:
    users = AuthStore(app.catalog.engine)  # what `citewell user create --admin` does
    admin = users.create_user("root", role="admin")
    return users.create_key(admin.id, "tests")[1]


def _user_key(admin: httpx.Client, url: str, name: str) -> str:
    """Admin makes the user; the user signs in and makes a lasting key."""
    password = f"{name}-password-long"
    created = admin.post("/api/v1/users", json={"name": name, "password": password})
    assert created.status_code == 201, created.text
    with httpx.Client(base_url=url, timeout=60) as anonymous:
        session = anonymous.post("/api/v1/auth/login", json={"name": name, "password": password})
    assert session.status_code == 200, session.text
    headers = {"Authorization": f"Bearer {session.json()['api_key']}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as user:
        key = user.post("/api/v1/auth/keys", json={"name": "main"})
    assert key.status_code == 201, key.text
    return str(key.json()["key"])


def user_keys(app: Citewell, url: str, names: tuple[str, ...]) -> dict[str, str]:
    """Keys for an admin ('admin') and for each named user, made as people make them."""
    keys = {"admin": _admin_key(app)}
    headers = {"Authorization": f"Bearer {keys['admin']}"}
    with httpx.Client(base_url=url, timeout=60, headers=headers) as admin:
        keys.update({name: _user_key(admin, url, name) for name in names})
    return keys


def _text(client: httpx.Client, kb_id: str, name: str, content: str) -> dict[str, Any]:
    response = client.post(
        f"/api/v1/knowledge/{kb_id}/text", json={"name": name, "content": content}
    )
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[World]:
    settings = Settings.load(
        data_dir=tmp_path_factory.mktemp("access"),
        llm_base_url=fake_llm.url + "/v1",
        model_presets='[{"id": "alpha-expert", "knowledge": ["alpha-private"], '
        '"base_model": "llama3"}]',
    )
    assert settings.access.auth == "required"  # the default
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    with run_server(settings, onnx_embedder, app) as url:
        keys = user_keys(app, url, ("alice", "bob"))
        keys["bad"] = "cw_" + "x" * 43
        world = World(url, app, fake_llm, keys, {}, {}, {}, "", "")
        with world.client("alice") as alice:
            world.alice_kb = alice.post("/api/v1/knowledge", json={"name": "alpha-private"}).json()
            world.other_kb = alice.post("/api/v1/knowledge", json={"name": "alpha-other"}).json()
            world.file_id = _text(alice, world.alice_kb["id"], "merger.md", ALICE_DOC)["file"]["id"]
            _text(alice, world.other_kb["id"], "other.md", "Swans are white.")
            queued = alice.post(
                f"/api/v1/knowledge/{world.alice_kb['id']}/files?wait=false",
                files={"file": ("queued.md", f"{SECRET} second memo.".encode())},
            )
            assert queued.status_code == 202, queued.text
            world.job_id = queued.json()["id"]
            scoped = alice.post(
                "/api/v1/auth/keys",
                json={"name": "other only", "knowledge_bases": ["alpha-other"]},
            )
            assert scoped.status_code == 201, scoped.text
            keys["alice-other-only"] = scoped.json()["key"]
        with world.client("bob") as bob:
            world.bob_kb = bob.post("/api/v1/knowledge", json={"name": "bob-notes"}).json()
            _text(bob, world.bob_kb["id"], "pond.md", BOB_DOC)
        yield world


def _chat(kb: str = "", file_id: str = "", model: str = "llama3") -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": "What does the merger plan buy?"}],
    }
    if kb:
        body["knowledge_collections"] = [kb]
    if file_id:
        body["file_ids"] = [file_id]
    return body


def _attempts(w: World) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, request kwargs) for every endpoint that could reveal Alice's KB."""
    kb, kb_name, fid = w.alice_kb["id"], w.alice_kb["name"], w.file_id
    query = {"query": "merger plan acquires the duck pond company", "k": 10}
    return [
        ("GET", "/api/v1/knowledge", {}),
        ("GET", f"/api/v1/knowledge/{kb}", {}),
        ("GET", f"/api/v1/knowledge/{kb_name}", {}),
        ("PATCH", f"/api/v1/knowledge/{kb}", {"json": {"description": "mine now"}}),
        ("POST", f"/api/v1/knowledge/{kb}/text", {"json": {"name": "x.md", "content": "x"}}),
        ("POST", f"/api/v1/knowledge/{w.bob_kb['id']}/files/{fid}", {}),
        ("DELETE", f"/api/v1/knowledge/{kb}/files/{fid}", {}),
        ("GET", f"/api/v1/knowledge/{kb}/grants", {}),
        ("PUT", f"/api/v1/knowledge/{kb}/grants", {"json": {"principal": "public"}}),
        ("GET", "/api/v1/files", {}),
        ("GET", f"/api/v1/files/{fid}", {}),
        ("GET", f"/api/v1/files/{fid}/text", {}),
        ("GET", f"/api/v1/files/{fid}/content", {}),
        ("GET", f"/api/v1/files/{fid}/pages/1/image", {}),
        ("DELETE", f"/api/v1/files/{fid}", {}),
        ("POST", "/api/v1/retrieval/query/doc", {"json": {**query, "collection_name": fid}}),
        (
            "POST",
            "/api/v1/retrieval/query/collection",
            {"json": {**query, "collection_names": [kb]}},
        ),
        (
            "POST",
            "/api/v1/retrieval/query/collection",
            {"json": {**query, "collection_names": [kb_name, "bob-notes"]}},
        ),
        ("GET", "/api/v1/rag/knowledge/collections", {}),
        ("GET", "/api/v1/rag/files", {}),
        ("POST", "/api/v1/rag/chat/completions", {"json": _chat(kb=kb)}),
        ("POST", "/api/v1/rag/chat/completions", {"json": _chat(kb=kb_name)}),
        ("POST", "/api/v1/rag/chat/completions", {"json": _chat(file_id=fid)}),
        ("POST", "/v1/chat/completions", {"json": _chat(kb=kb)}),
        ("POST", "/v1/chat/completions", {"json": _chat(model="alpha-expert")}),
        ("POST", "/v1/chat/completions", {"json": {**_chat(model="alpha-expert"), "stream": True}}),
        ("GET", "/api/v1/jobs", {}),
        ("GET", f"/api/v1/jobs?knowledge_base={kb}", {}),
        ("GET", f"/api/v1/jobs/{w.job_id}", {}),
        ("POST", f"/api/v1/jobs/{w.job_id}/retry", {}),
        ("GET", "/api/v1/audit", {}),
        ("GET", "/api/v1/settings", {}),
        ("GET", "/api/v1/embedding", {}),
        ("DELETE", f"/api/v1/knowledge/{kb}", {}),
    ]


@pytest.mark.parametrize("who", ["bob", "anonymous", "bad", "alice-other-only"])
def test_nobody_else_reads_alices_private_kb(world, who):
    asked = len(world.llm.requests)
    with world.client(who) as client:
        for method, path, kwargs in _attempts(world):
            response = client.request(method, path, **kwargs)
            where = f"{who}: {method} {path} {kwargs.get('json', '')}"
            assert response.status_code < 500, (where, response.text)
            assert SECRET not in response.text, where
            if who in ("anonymous", "bad"):
                assert response.status_code == 401, where
                assert response.json()["code"] == "unauthenticated"
            elif response.status_code == 200 and "chat/completions" in path:
                _no_sources_from(world, response, where)  # warnings may echo the asked name
            elif response.status_code == 200:
                assert world.file_id not in response.text, where
                assert world.alice_kb["id"] not in response.text, where
            else:
                assert response.status_code in (403, 404), (where, response.text)
    prompts = json.dumps(world.llm.requests[asked:])
    assert SECRET not in prompts  # nothing of hers reached the LLM either
    _alice_still_has_everything(world)


def _no_sources_from(world: World, response: httpx.Response, where: str) -> None:
    if response.headers["content-type"].startswith("text/event-stream"):
        events = [line[6:] for line in response.text.splitlines() if line.startswith("data: {")]
        sources = [s for e in events for s in json.loads(e).get("sources", [])]
    else:
        sources = response.json()["sources"]
    assert all(s["metadata"]["file_id"] != world.file_id for s in sources), where


def _alice_still_has_everything(world: World) -> None:
    with world.client("alice") as alice:
        kb = alice.get(f"/api/v1/knowledge/{world.alice_kb['id']}").json()
        assert kb["description"] == "" and world.file_id in {f["id"] for f in kb["files"]}
        found = alice.post(
            "/api/v1/retrieval/query/collection",
            json={"query": "merger plan", "collection_names": ["alpha-private"], "k": 3},
        ).json()
        assert any(SECRET in text for text in found["documents"][0])


def test_the_owner_and_admins_read_it_and_a_preset_serves_its_owner(world):
    for who in ("alice", "admin"):
        with world.client(who) as client:
            chat = client.post("/v1/chat/completions", json=_chat(model="alpha-expert")).json()
            assert any(s["metadata"]["file_id"] == world.file_id for s in chat["sources"]), who
            original = client.get(f"/api/v1/files/{world.file_id}/content")
            assert original.status_code == 200 and SECRET.encode() in original.content
            assert original.headers["x-content-type-options"] == "nosniff"


def test_sharing_grants_read_then_write_then_nothing(world):
    kb = world.alice_kb["id"]
    with world.client("alice") as alice, world.client("bob") as bob:
        grant = alice.put(f"/api/v1/knowledge/{kb}/grants", json={"principal": "user:bob"})
        assert grant.status_code == 200, grant.text
        assert grant.json() == {
            "knowledge_base_id": kb,
            "principal": "user:bob",
            "permission": "read",
        }
        hits = bob.post(
            "/api/v1/retrieval/query/doc",
            json={"query": SECRET, "collection_name": world.file_id, "k": 2},
        )
        assert SECRET in hits.json()["documents"][0][0]
        refused = bob.post(f"/api/v1/knowledge/{kb}/text", json={"name": "b.md", "content": "b"})
        assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
        assert bob.delete(f"/api/v1/knowledge/{kb}").status_code == 403  # owners delete
        alice.put(
            f"/api/v1/knowledge/{kb}/grants", json={"principal": "user:bob", "permission": "write"}
        )
        assert (
            bob.patch(f"/api/v1/knowledge/{kb}", json={"description": "notes"}).status_code == 200
        )
        alice.patch(f"/api/v1/knowledge/{kb}", json={"description": ""})
        assert alice.delete(f"/api/v1/knowledge/{kb}/grants/user:bob").status_code == 204
        after = bob.post(
            "/api/v1/retrieval/query/collection",
            json={"query": SECRET, "collection_names": [kb], "k": 2},
        )
        assert after.status_code == 404 and SECRET not in after.text


def test_groups_and_public_grants(world):
    kb = world.alice_kb["id"]
    with world.client("admin") as admin, world.client("alice") as alice, world.client("bob") as bob:
        assert admin.post("/api/v1/groups", json={"name": "finance"}).status_code == 201
        assert admin.post("/api/v1/groups/finance/members", json={"user": "bob"}).json()[
            "members"
        ] == ["bob"]
        alice.put(f"/api/v1/knowledge/{kb}/grants", json={"principal": "group:finance"})
        assert kb in {k["id"] for k in bob.get("/api/v1/knowledge").json()}
        admin.delete("/api/v1/groups/finance/members/bob")
        assert kb not in {k["id"] for k in bob.get("/api/v1/knowledge").json()}
        alice.put(f"/api/v1/knowledge/{kb}/grants", json={"principal": "public"})
        assert kb in {k["id"] for k in bob.get("/api/v1/knowledge").json()}
        alice.delete(f"/api/v1/knowledge/{kb}/grants/public")
        admin.delete("/api/v1/groups/finance")
        assert kb not in {k["id"] for k in bob.get("/api/v1/knowledge").json()}


def test_read_only_and_revoked_keys(world):
    with world.client("alice") as alice:
        made = alice.post("/api/v1/auth/keys", json={"name": "reader", "read_only": True}).json()
        reader = {"Authorization": f"Bearer {made['key']}"}
        kb = world.alice_kb["id"]
        denied = alice.post(
            f"/api/v1/knowledge/{kb}/text", json={"name": "r.md", "content": "r"}, headers=reader
        )
        assert denied.status_code == 403
        search = alice.post(
            "/api/v1/retrieval/query/collection",
            json={"query": SECRET, "collection_names": [kb]},
            headers=reader,
        )
        assert search.status_code == 200
        assert alice.delete(f"/api/v1/auth/keys/{made['id']}").status_code == 204
        gone = alice.get("/api/v1/knowledge", headers=reader)
        assert gone.status_code == 401 and gone.headers["www-authenticate"] == "Bearer"
        listed = {k["id"]: k for k in alice.get("/api/v1/auth/keys").json()}
        assert listed[made["id"]]["revoked"] and "key" not in listed[made["id"]]


def test_the_openai_sdk_uses_a_citewell_key(world):
    sdk = OpenAI(base_url=world.url + "/v1", api_key=world.keys["alice"])
    answer = sdk.chat.completions.create(
        model="alpha-expert", messages=[{"role": "user", "content": f"What is {SECRET}?"}]
    )
    sources = answer.model_extra["sources"]
    assert any(SECRET in s["content"] for s in sources)
    with pytest.raises(AuthenticationError):
        OpenAI(base_url=world.url + "/v1", api_key="not-a-key").models.list()


def test_admins_see_the_audit_trail(world):
    with world.client("admin") as admin:
        events = admin.get("/api/v1/audit", params={"actor": "alice", "limit": 1000}).json()
    actions = {e["action"] for e in events}
    assert {"kb.create", "file.upload", "file.queue", "key.create", "user.login"} <= actions
    assert SECRET not in json.dumps(events)  # names and ids, never document text
    created = next(
        e for e in events if e["action"] == "kb.create" and e["target_id"] == world.alice_kb["id"]
    )
    assert created["actor"] == "alice" and created["detail"] == {"name": "alpha-private"}


def test_only_admins_read_the_settings(world):
    with world.client("bob") as bob, world.client("admin") as admin:
        refused = bob.get("/api/v1/settings")
        shown = admin.get("/api/v1/settings")
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert shown.status_code == 200 and shown.json()["auth"] == "required"


def test_the_filter_is_in_the_store_query_itself(world):
    """Even a search that names no KB at all (what a route that forgot to check would send)
    finds only readable chunks: the caller's KBs are part of the chunk-store query."""
    users, grants = AuthStore(world.app.catalog.engine), GrantStore(world.app.catalog.engine)
    bob = grants.access(users.get_user("bob"))
    everything = ChunkFilter()
    just_her_file = ChunkFilter(file_ids=(world.file_id,))
    for where in (everything, just_her_file):
        assert bob.where(where).kb_ids == (world.bob_kb["id"],)
        found = Scoped(world.app, bob).search("merger plan duck pond", where, k=50)
        assert all(world.alice_kb["id"] not in r.chunk.kb_ids for r in found)
    alice = grants.access(users.get_user("alice"))
    assert Scoped(world.app, alice).search("merger plan", just_her_file, k=5)


@pytest.mark.parametrize("who", ["bob", "alice-other-only"])
def test_builtin_tools_never_reach_alices_private_kb(world, who):
    """Native function calling: whatever the model asks for (Alice's KB id or name, her file
    id, her secret word), no tool result carries her KB, through her preset or without one."""
    kb, fid = world.alice_kb["id"], world.file_id
    plan = [
        ("list_knowledge_bases", {}),
        ("search_knowledge_bases", {"query": "alpha"}),
        ("query_knowledge_bases", {"query": "merger plan"}),
        ("list_knowledge", {}),
        ("list_knowledge", {"knowledge_id": kb}),
        ("search_knowledge_files", {"query": "merger"}),
        ("search_knowledge_files", {"query": "merger", "knowledge_id": "alpha-private"}),
        ("query_knowledge_files", {"query": f"{SECRET} merger plan duck pond"}),
        ("query_knowledge_files", {"query": "merger", "knowledge_ids": [kb, "alpha-private"]}),
        ("view_knowledge_file", {"file_id": fid}),
    ]
    for model, stream in (("alpha-expert", False), ("llama3", True)):
        world.llm.tool_script = [list(plan)]
        asked = len(world.llm.requests)
        body = {**_chat(model=model), "function_calling": "native", "stream": stream}
        with world.client(who) as client:
            response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        # Status events echo the model's own arguments (which name her ids here): left out.
        shown = [line for line in response.text.splitlines() if '"type": "status"' not in line]
        assert SECRET not in "\n".join(shown) and fid not in "\n".join(shown)
        results = [
            m["content"]
            for _, sent in world.llm.requests[asked:]
            for m in sent["messages"]
            if m["role"] == "tool"
        ]
        assert len(results) == len(plan), (model, results)
        for result in results:
            assert SECRET not in result, result
            if "error" not in json.loads(result):  # an error may echo the id that was asked
                assert fid not in result and kb not in result, result
    world.llm.tool_script = []
