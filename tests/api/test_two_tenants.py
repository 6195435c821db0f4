"""The two-tenant suite: every surface of the server holds the tenancy rule.

Alice owns a knowledge base with files, a page image, a folder connector with credentials,
queued jobs, a folder, a model preset, an Open WebUI upload and keys. Bob, a user of the
same server, asks every HTTP route and every MCP tool about each of her objects, one slot
at a time (his own objects in the other slots), and then about a made-up object in the same
slot: the two answers must be the same, byte for byte once the ids are put aside. Routes
that name no object of hers (listings, searches, chats, his own account) must answer
without a trace of hers; admin routes refuse him. A route or tool the suite does not know
fails ``test_every_surface_is_in_the_suite``, so the next surface cannot be forgotten.
MCP sessions and resumable streams: tests/api/test_mcp_sessions.py (listed here too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from citewell.testing.pdf_pages import Page, pdf_bytes
from tests.api.conftest import KeyedServer, keyed_server
from tests.api.surfaces import http_routes

pytestmark = pytest.mark.api

SECRET = "Pangolinquist"  # a word only alice's documents hold
MADE_UP = {  # what a guesser would send, per kind of object
    "kb": "5f3c1e0a9b7d4c2e8f6a1b3d5c7e9f01",
    "file": "8a1b2c3d4e5f60718293a4b5c6d7e8f9",
    "job": "1234567890abcdef1234567890abcdef",
    "batch": "fedcba0987654321fedcba0987654321",
    "connector": "0a0b0c0d0e0f10111213141516171819",
    "preset": "made-up-preset",
    "key": "99999999999999999999999999999999",
    "dir": "d1d2d3d4d5d6d7d8d9dadbdcdddedfe0",
    "upload": "c0ffeec0ffeec0ffeec0ffeec0ffee00",
}


@dataclass
class Tenants:
    server: KeyedServer
    alice: dict[str, str]  # kind → her object's id
    bob: dict[str, str]  # kind → his own object of that kind
    markers: tuple[str, ...]  # what must never show in bob's answers

    def client(self, who: str) -> httpx.Client:
        return self.server.client(who)


def _kb_with_file(client: httpx.Client, name: str, text: str) -> tuple[str, str]:
    kb = client.post("/api/v1/knowledge", json={"name": name})
    assert kb.status_code == 201, kb.text
    sent = client.post(
        f"/api/v1/knowledge/{kb.json()['id']}/text", json={"name": "memo.md", "content": text}
    )
    assert sent.status_code == 201, sent.text
    return kb.json()["id"], sent.json()["file"]["id"]


def _objects(client: httpx.Client, kb: str, shares: Path, who: str) -> dict[str, str]:
    """A user's own objects of every kind, made as the user would make them."""
    page = Page()
    page.text(72, 72, f"{who}'s page")
    made = client.post(
        f"/api/v1/knowledge/{kb}/files", files={"file": ("page.pdf", pdf_bytes([page]))}
    )
    assert made.status_code == 201, made.text
    (shares / who).mkdir()
    connector = client.post(
        f"/api/v1/knowledge/{kb}/connectors",
        json={
            "kind": "folder",
            "target": str(shares / who),
            "credentials": {"webhook_secret": f"{who}-hook-secret"},
            "interval": 86400,
        },
    )
    assert connector.status_code == 201, connector.text
    queued = client.post(
        f"/api/v1/knowledge/{kb}/batch",
        files=[("files", ("later.md", f"# Later\n\n{who} writes later.".encode()))],
    )
    assert queued.status_code == 202, queued.text
    folder = client.post(f"/api/v1/knowledge/{kb}/dirs/create", json={"name": "notes"})
    assert folder.status_code == 200, folder.text
    preset = client.post("/api/v1/models", json={"model": f"{who}-expert", "knowledge": [kb]})
    assert preset.status_code == 201, preset.text
    upload = client.post("/api/v1/files/", files={"file": ("up.md", f"{who} upload".encode())})
    assert upload.status_code == 200, upload.text
    key = client.post("/api/v1/auth/keys", json={"name": "spare"})
    assert key.status_code == 201, key.text
    return {
        "pdf": made.json()["file"]["id"],
        "connector": connector.json()["id"],
        "batch": queued.json()["batch_id"],
        "job": queued.json()["jobs"][0]["id"],
        "dir": folder.json()["id"],
        "preset": preset.json()["id"],
        "upload": upload.json()["id"],
        "key": key.json()["id"],
    }


@pytest.fixture(scope="module")
def tenants(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[Tenants]:
    shares = tmp_path_factory.mktemp("tenant-shares")
    grants = f"{shares / 'alice'}=alice, {shares / 'bob'}=bob"
    data = tmp_path_factory.mktemp("two-tenants")
    settings = {"connector_allowed_paths": grants, "connector_watch": False}
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob"), **settings) as server:
        with server.client("alice") as alice, server.client("bob") as bob:
            text = f"# Merger\n\nProject {SECRET} buys the pond company for nine million."
            kb, file_id = _kb_with_file(alice, "alice-private", text)
            alices = {"kb": kb, "file": file_id, **_objects(alice, kb, shares, "alice")}
            kb, file_id = _kb_with_file(bob, "bob-notes", "# Pond\n\nDucks eat plants.")
            bobs = {"kb": kb, "file": file_id, **_objects(bob, kb, shares, "bob")}
        markers = (SECRET, "alice-private", "alice-hook-secret", str(shares / "alice"))
        markers += tuple(v for k, v in alices.items())
        yield Tenants(server, alices, bobs, markers)


# --- the surfaces ---------------------------------------------------------------------
Call = Callable[[dict[str, str]], dict[str, Any]]  # the objects in each slot → request kwargs


def nothing(_: dict[str, str]) -> dict[str, Any]:
    return {}


def body(make: Callable[[dict[str, str]], Any]) -> Call:
    return lambda o: {"json": make(o)}


def upload(field: str = "file") -> Call:
    return lambda _: {"files": [(field, ("x.md", b"# X\n\nbob's words"))]}


def chat(o: dict[str, str]) -> dict[str, Any]:
    question = {"role": "user", "content": "What does the merger buy?"}
    return {"model": "llama3", "messages": [question], "knowledge_collections": [o["kb"]]}


QUERY = {"query": "merger plan pond company", "k": 10}
TOP_5 = {"top_k": 5}
FILE_ID = body(lambda o: {"file_id": o["file"]})


@dataclass(frozen=True)
class Surface:
    """How bob calls a surface: ``slots``, the kinds of object it names (each varied in turn
    between alice's and a made-up one); ``kind``: 'object' (compare), 'own' (his own or
    nobody's: no trace of hers), 'admin' (refused, whatever it names), 'public' (no key)."""

    kind: str
    slots: tuple[str, ...] = ()
    call: Call = nothing
    names: dict[str, str] | None = None  # path parameter → kind, where not PARAMETERS'


OBJECT, OWN, ADMIN, PUBLIC = "object", "own", "admin", "public"
PARAMETERS = {  # the kind of object each path parameter names
    "kb_id": "kb",
    "kb": "kb",
    "file_id": "file",
    "upload_id": "upload",
    "job_id": "job",
    "batch_id": "batch",
    "connector_id": "connector",
    "model_id": "preset",
    "key_id": "key",
    "dir_id": "dir",
}
FIXED = {"page": "1", "principal": "user:bob", "group": "finance", "user": "alice"}
KB = "/api/v1/knowledge/{kb_id}"
CONNECTOR = "/api/v1/knowledge/{kb}/connectors/{connector_id}"

HTTP: dict[tuple[str, str], Surface] = {
    # Knowledge bases, their files, folders and grants
    ("GET", "/api/v1/knowledge"): Surface(OWN),
    ("POST", "/api/v1/knowledge"): Surface(OWN, call=body(lambda _: {"name": "bobs-new"})),
    ("GET", KB): Surface(OBJECT, ("kb",)),
    ("PATCH", KB): Surface(OBJECT, ("kb",), body(lambda _: {"description": "mine"})),
    ("DELETE", KB): Surface(OBJECT, ("kb",)),
    ("POST", KB + "/batch"): Surface(OBJECT, ("kb",), upload("files")),
    ("POST", KB + "/files"): Surface(OBJECT, ("kb",), upload()),
    ("GET", KB + "/files"): Surface(OBJECT, ("kb",)),
    ("POST", KB + "/files/estimate"): Surface(OBJECT, ("kb",), upload("files")),
    ("POST", KB + "/files/{file_id}"): Surface(OBJECT, ("kb", "file")),
    ("DELETE", KB + "/files/{file_id}"): Surface(OBJECT, ("kb", "file")),
    ("POST", KB + "/text"): Surface(
        OBJECT, ("kb",), body(lambda _: {"name": "t.md", "content": "bob's"})
    ),
    ("GET", KB + "/grants"): Surface(OBJECT, ("kb",)),
    ("PUT", KB + "/grants"): Surface(OBJECT, ("kb",), body(lambda _: {"principal": "public"})),
    ("DELETE", KB + "/grants/{principal}"): Surface(OBJECT, ("kb",)),
    # Open WebUI's knowledge API
    ("GET", "/api/v1/knowledge/"): Surface(OWN),
    ("POST", "/api/v1/knowledge/create"): Surface(OWN, call=body(lambda _: {"name": "owui"})),
    ("DELETE", KB + "/delete"): Surface(OBJECT, ("kb",)),
    ("POST", KB + "/reset"): Surface(OBJECT, ("kb",)),
    ("POST", KB + "/file/add"): Surface(
        OBJECT, ("kb", "file"), body(lambda o: {"file_id": o["file"]})
    ),
    ("POST", KB + "/file/update"): Surface(
        OBJECT, ("kb", "file"), body(lambda o: {"file_id": o["file"]})
    ),
    ("POST", KB + "/file/remove"): Surface(
        OBJECT, ("kb", "file"), body(lambda o: {"file_id": o["file"]})
    ),
    ("POST", KB + "/file/move"): Surface(
        OBJECT, ("kb", "file"), body(lambda o: {"file_id": o["file"], "directory_id": None})
    ),
    ("POST", KB + "/files/batch/add"): Surface(
        OBJECT, ("kb", "file"), body(lambda o: [{"file_id": o["file"]}])
    ),
    ("POST", KB + "/sync/diff"): Surface(OBJECT, ("kb",), body(lambda _: {"manifest": []})),
    ("POST", KB + "/sync/cleanup"): Surface(
        OBJECT, ("kb", "file"), body(lambda o: {"file_ids": [o["file"]]})
    ),
    ("GET", KB + "/folders"): Surface(OBJECT, ("kb",)),
    ("POST", KB + "/dirs/create"): Surface(OBJECT, ("kb",), body(lambda _: {"name": "d"})),
    ("POST", KB + "/dirs/{dir_id}/update"): Surface(
        OBJECT, ("kb", "dir"), body(lambda _: {"name": "e"})
    ),
    ("DELETE", KB + "/dirs/{dir_id}/delete"): Surface(OBJECT, ("kb", "dir")),
    # Connectors, their credentials and webhooks
    ("GET", "/api/v1/knowledge/{kb}/connectors"): Surface(OBJECT, ("kb",)),
    ("POST", "/api/v1/knowledge/{kb}/connectors"): Surface(
        OBJECT, ("kb",), body(lambda _: {"kind": "git", "target": "https://example.org/r.git"})
    ),
    ("GET", CONNECTOR): Surface(OBJECT, ("kb", "connector")),
    ("PATCH", CONNECTOR): Surface(
        OBJECT, ("kb", "connector"), body(lambda _: {"options": {"include": "*.md"}})
    ),
    ("DELETE", CONNECTOR): Surface(OBJECT, ("kb", "connector")),
    ("POST", CONNECTOR + "/sync"): Surface(OBJECT, ("kb", "connector")),
    ("POST", "/api/v1/connectors/{connector_id}/webhook"): Surface(
        PUBLIC, ("connector",), lambda _: {"content": b"{}", "headers": {"X-Gitlab-Token": "g"}}
    ),
    # Files, their text, originals and page images
    ("GET", "/api/v1/files"): Surface(OWN),
    ("POST", "/api/v1/files/"): Surface(OWN, call=upload()),
    ("GET", "/api/v1/files/{file_id}"): Surface(OBJECT, ("file",)),
    ("DELETE", "/api/v1/files/{file_id}"): Surface(OBJECT, ("file",)),
    ("GET", "/api/v1/files/{file_id}/content"): Surface(OBJECT, ("file",)),
    ("GET", "/api/v1/files/{file_id}/text"): Surface(OBJECT, ("file",)),
    ("GET", "/api/v1/files/{file_id}/pages/{page}/image"): Surface(
        OBJECT, ("pdf",), names={"file_id": "pdf"}
    ),
    ("GET", "/api/v1/files/{upload_id}/process/status"): Surface(OBJECT, ("upload",)),
    # Jobs and their event streams
    ("GET", "/api/v1/jobs"): Surface(OWN),
    ("GET", "/api/v1/jobs/events"): Surface(
        OBJECT, ("kb",), lambda o: {"params": {"knowledge_base": o["kb"]}}
    ),
    ("GET", "/api/v1/jobs/{job_id}"): Surface(OBJECT, ("job",)),
    ("POST", "/api/v1/jobs/{job_id}/cancel"): Surface(OBJECT, ("job",)),
    ("POST", "/api/v1/jobs/{job_id}/retry"): Surface(OBJECT, ("job",)),
    ("GET", "/api/v1/jobs/{job_id}/events"): Surface(OBJECT, ("job",)),
    ("GET", "/api/v1/jobs/batches/{batch_id}"): Surface(OBJECT, ("batch",)),
    ("POST", "/api/v1/jobs/batches/{batch_id}/cancel"): Surface(OBJECT, ("batch",)),
    ("GET", "/api/v1/jobs/batches/{batch_id}/events"): Surface(OBJECT, ("batch",)),
    # Model presets and their grants
    ("GET", "/api/v1/models"): Surface(OWN),
    ("POST", "/api/v1/models"): Surface(OWN, call=body(lambda _: {"model": "bob-second"})),
    ("GET", "/api/v1/models/{model_id}"): Surface(OBJECT, ("preset",)),
    ("PUT", "/api/v1/models/{model_id}"): Surface(
        OBJECT, ("preset",), body(lambda _: {"model": "renamed-by-bob"})
    ),
    ("DELETE", "/api/v1/models/{model_id}"): Surface(OBJECT, ("preset",)),
    ("GET", "/api/v1/models/{model_id}/grants"): Surface(OBJECT, ("preset",)),
    ("PUT", "/api/v1/models/{model_id}/grants"): Surface(
        OBJECT, ("preset",), body(lambda _: {"principal": "public"})
    ),
    ("DELETE", "/api/v1/models/{model_id}/grants/{principal}"): Surface(OBJECT, ("preset",)),
    # Search, chat and retrieval (the objects ride in the body)
    ("POST", "/api/v1/retrieval/query/collection"): Surface(
        OBJECT, ("kb",), body(lambda o: {**QUERY, "collection_names": [o["kb"]]})
    ),
    ("POST", "/api/v1/retrieval/query/doc"): Surface(
        OBJECT, ("file",), body(lambda o: {**QUERY, "collection_name": o["file"]})
    ),
    ("POST", "/api/v1/retrieval/process/web"): Surface(
        OBJECT, ("kb",), body(lambda o: {"url": "http://127.0.0.1:9/", "collection_name": o["kb"]})
    ),
    ("POST", "/api/v1/retrieval/process/web_search"): Surface(
        OBJECT, ("kb",), body(lambda o: {"queries": ["ducks"], "collection_name": o["kb"]})
    ),
    ("POST", "/api/v1/retrieval/process/youtube"): Surface(
        OBJECT,
        ("kb",),
        body(lambda o: {"url": "https://youtu.be/aaaaaaaaaaa", "collection_name": o["kb"]}),
    ),
    ("GET", "/api/v1/retrieval/config"): Surface(ADMIN),
    ("POST", "/api/v1/retrieval/config/update"): Surface(ADMIN, call=body(lambda _: {})),
    ("POST", "/api/v1/retrieval/config/reset"): Surface(ADMIN),
    ("POST", "/api/v1/rag/chat/completions"): Surface(OBJECT, ("kb",), body(chat)),
    ("GET", "/api/v1/rag/files"): Surface(OWN),
    ("GET", "/api/v1/rag/knowledge/collections"): Surface(OWN),
    ("GET", "/api/v1/rag/models"): Surface(OWN),
    ("POST", "/v1/chat/completions"): Surface(OBJECT, ("kb",), body(chat)),
    ("POST", "/v1/embeddings"): Surface(OWN, call=body(lambda _: {"input": "ducks"})),
    ("GET", "/v1/models"): Surface(OWN),
    ("GET", "/v1/models/{model_id}"): Surface(OBJECT, ("preset",)),
    ("POST", "/api/v1/dify/retrieval"): Surface(
        OBJECT,
        ("kb",),
        body(
            lambda o: {
                "knowledge_id": o["kb"],
                "query": "merger",
                "retrieval_setting": {"top_k": 5},
            }
        ),
    ),
    # The caller's own account and keys
    ("GET", "/api/v1/auth/me"): Surface(OWN),
    ("GET", "/api/v1/auth/keys"): Surface(OWN),
    ("POST", "/api/v1/auth/keys"): Surface(OWN, call=body(lambda _: {"name": "another"})),
    ("DELETE", "/api/v1/auth/keys/{key_id}"): Surface(OBJECT, ("key",)),
    ("POST", "/api/v1/auth/logout"): Surface(OWN),
    ("GET", "/api/v1/embedding"): Surface(OWN),
    ("GET", "/api/v1/stats/store"): Surface(OWN),
    # Admins only
    ("GET", "/api/v1/audit"): Surface(ADMIN),
    ("GET", "/api/v1/settings"): Surface(ADMIN),
    ("GET", "/api/v1/users"): Surface(ADMIN),
    ("POST", "/api/v1/users"): Surface(ADMIN, call=body(lambda _: {"name": "carol"})),
    ("GET", "/api/v1/users/{user}"): Surface(ADMIN),
    ("PATCH", "/api/v1/users/{user}"): Surface(ADMIN, call=body(lambda _: {"disabled": True})),
    ("GET", "/api/v1/groups"): Surface(ADMIN),
    ("POST", "/api/v1/groups"): Surface(ADMIN, call=body(lambda _: {"name": "g"})),
    ("DELETE", "/api/v1/groups/{group}"): Surface(ADMIN),
    ("POST", "/api/v1/groups/{group}/members"): Surface(
        ADMIN, call=body(lambda _: {"user": "bob"})
    ),
    ("DELETE", "/api/v1/groups/{group}/members/{user}"): Surface(ADMIN),
    ("GET", "/metrics"): Surface(PUBLIC),
    # Without a key
    ("GET", "/healthz"): Surface(PUBLIC),
    ("GET", "/readyz"): Surface(PUBLIC),
    ("GET", "/api/v1/auth/methods"): Surface(PUBLIC),
    ("POST", "/api/v1/auth/login"): Surface(
        PUBLIC, call=body(lambda _: {"name": "alice", "password": "wrong-password-long"})
    ),
    ("GET", "/api/v1/auth/oidc/login"): Surface(PUBLIC),
    ("GET", "/api/v1/auth/oidc/callback"): Surface(PUBLIC),
    ("POST", "/api/v1/auth/oidc/ticket"): Surface(
        PUBLIC, call=body(lambda _: {"ticket": "x" * 43})
    ),
    # MCP over HTTP: its tools and streams below (MCP_TOOLS, test_mcp_sessions.py)
    ("ANY", "/mcp"): Surface(OWN),
}
MCP_TOOLS: dict[str, Surface] = {
    "list_knowledge_bases": Surface(OWN),
    "search": Surface(OBJECT, ("kb",), lambda o: {"query": "merger", "knowledge_bases": [o["kb"]]}),
    "ask": Surface(
        OBJECT, ("kb",), lambda o: {"question": "merger?", "knowledge_bases": [o["kb"]]}
    ),
    "read_file": Surface(OBJECT, ("file",), lambda o: {"file_id": o["file"]}),
    "list_files": Surface(OBJECT, ("kb",), lambda o: {"knowledge_base": o["kb"]}),
}
MCP_RESOURCES = {"citewell://kb/{kb}": ("kb",), "citewell://file/{file}": ("file",)}
MCP_METHODS = {  # each request the MCP server answers, and where it is held to the rule
    "ping": "nothing of anyone's",
    "server/discover": "nothing of anyone's",
    "tools/list": "test_every_surface_is_in_the_suite (the same tools for everyone)",
    "tools/call": "test_an_mcp_tool_answers_her_object_like_a_made_up_one",
    "resources/list": "test_mcp_resources_answer_her_objects_like_made_up_ones",
    "resources/read": "test_mcp_resources_answer_her_objects_like_made_up_ones",
    "resources/templates/list": "test_mcp_listings_show_nothing_of_hers",
    "prompts/list": "test_mcp_listings_show_nothing_of_hers",
    "prompts/get": "test_mcp_listings_show_nothing_of_hers",
    "subscriptions/listen": "test_mcp_sessions.py (streams and resumption per session)",
}
VOLATILE = {"id", "created", "created_at", "updated_at", "system_fingerprint", "took_ms"}


# --- asking ---------------------------------------------------------------------------
def _url(path: str, objects: dict[str, str], names: dict[str, str] | None) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        kind = (names or {}).get(name) or PARAMETERS.get(name)
        return objects[kind] if kind else FIXED[name]

    return re.sub(r"\{(\w+)\}", value, path)


def _ask(client: httpx.Client, route: tuple[str, str], objects: dict[str, str]) -> httpx.Response:
    surface = HTTP[route]
    method, path = route
    return client.request(method, _url(path, objects, surface.names), **surface.call(objects))


def _seen(text: str, ids: tuple[str, ...]) -> str:
    """The answer with the asked ids put aside and volatile fields (ids, times) dropped."""
    for ident in ids:
        text = text.replace(ident, "<asked>")
    try:
        return json.dumps(_without_volatile(json.loads(text)), sort_keys=True)
    except ValueError:
        return text


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def _made_up(kind: str) -> str:
    return MADE_UP["file" if kind == "pdf" else kind]


def _traces(t: Tenants, text: str) -> list[str]:
    return [marker for marker in t.markers if marker in text]


# --- the tests ------------------------------------------------------------------------
def test_every_surface_is_in_the_suite(tenants: Tenants) -> None:
    from citewell.api.app import create_app

    served = http_routes(create_app(tenants.server.settings, tenants.server.app))
    missing = sorted(served - set(HTTP))
    gone = sorted(set(HTTP) - served)
    assert not missing, f"routes not in the two-tenant suite (add them to HTTP): {missing}"
    assert not gone, f"the suite names routes the server no longer has: {gone}"
    tools = anyio.run(_mcp_tool_names, tenants)
    assert tools == set(MCP_TOOLS), "MCP tools and the suite's MCP_TOOLS differ"
    assert _mcp_methods(tenants) == set(MCP_METHODS), "MCP requests and MCP_METHODS differ"


def _mcp_methods(t: Tenants) -> set[str]:
    """The requests the MCP server answers (the SDK's handler table)."""
    from citewell.mcp_server.server import build_mcp_server

    server = build_mcp_server(t.server.app, t.server.app.chat, lambda _: None)
    return set(server._lowlevel_server._request_handlers)


@pytest.mark.parametrize(
    ("route", "slot"),
    [(r, s) for r, x in HTTP.items() if x.kind in (OBJECT, PUBLIC) for s in x.slots],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else v,
)
def test_another_tenants_object_answers_like_a_made_up_one(tenants, route, slot) -> None:
    hers = {**tenants.bob, slot: tenants.alice[slot]}
    invented = {**tenants.bob, slot: _made_up(slot)}
    with tenants.client("bob") as bob:
        answers = [_ask(bob, route, hers), _ask(bob, route, invented)]
    ids = (tenants.alice[slot], _made_up(slot))
    statuses = [a.status_code for a in answers]
    assert statuses[0] == statuses[1], (statuses, answers[0].text[:300])
    assert statuses[0] < 500 or statuses[0] == 502, answers[0].text[:300]  # 502: no web here
    assert _seen(answers[0].text, ids) == _seen(answers[1].text, ids), answers[0].text[:500]
    assert not _traces(tenants, answers[0].text.replace(tenants.alice[slot], "")), route


@pytest.mark.parametrize("route", [r for r, x in HTTP.items() if x.kind == OWN and r[0] != "ANY"])
def test_what_names_no_object_of_hers_shows_none(tenants, route) -> None:
    with tenants.client("bob") as bob:
        answer = _ask(bob, route, tenants.bob)
    assert answer.status_code < 500, answer.text[:300]
    assert not _traces(tenants, answer.text), (route, answer.text[:500])


@pytest.mark.parametrize("route", [r for r, x in HTTP.items() if x.kind == ADMIN])
def test_admin_routes_refuse_a_user(tenants, route) -> None:
    with tenants.client("bob") as bob:
        answer = _ask(bob, route, tenants.bob)
    assert answer.status_code == 403 and answer.json()["code"] == "forbidden", answer.text


@pytest.mark.parametrize("route", [r for r, x in HTTP.items() if x.kind == PUBLIC and not x.slots])
def test_what_needs_no_key_shows_nothing_of_hers(tenants, route) -> None:
    with httpx.Client(base_url=tenants.server.url, timeout=60) as anyone:
        answer = _ask(anyone, route, tenants.bob)
    assert answer.status_code < 500, answer.text[:300]
    assert not _traces(tenants, answer.text), (route, answer.text[:500])


# --- MCP ------------------------------------------------------------------------------
def _mcp(t: Tenants, who: str) -> Client:
    headers = {"Authorization": f"Bearer {t.server.keys[who]}"}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    return Client(streamable_http_client(f"{t.server.url}/mcp", http_client=http))


async def _mcp_tool_names(t: Tenants) -> set[str]:
    async with _mcp(t, "bob") as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def _tool_answers(t: Tenants, tool: str, slot: str) -> list[tuple[bool, str]]:
    surface, answers = MCP_TOOLS[tool], []
    async with _mcp(t, "bob") as client:
        for value in (t.alice[slot], _made_up(slot)):
            result = await client.call_tool(tool, surface.call({**t.bob, slot: value}))
            text = " ".join(getattr(c, "text", "") for c in result.content)
            answers.append((result.is_error, _seen(text, (t.alice[slot], _made_up(slot)))))
    return answers


@pytest.mark.parametrize(("tool", "slot"), [(n, s) for n, x in MCP_TOOLS.items() for s in x.slots])
def test_an_mcp_tool_answers_her_object_like_a_made_up_one(tenants, tool, slot) -> None:
    hers, invented = anyio.run(_tool_answers, tenants, tool, slot)
    assert hers == invented
    assert not _traces(tenants, hers[1])


async def _resource_answers(t: Tenants, template: str, slot: str) -> list[str]:
    answers = []
    async with _mcp(t, "bob") as client:
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        for value in (t.alice[slot], _made_up(slot)):
            try:
                read = await client.read_resource(template.replace("{" + slot + "}", value))
                answers.append(" ".join(getattr(c, "text", "") for c in read.contents))
            except Exception as exc:  # noqa: BLE001 - the SDK raises the server's error
                answers.append(_seen(str(exc), (t.alice[slot], _made_up(slot))))
    answers.append(" ".join(listed))
    return answers


@pytest.mark.parametrize(("template", "slots"), list(MCP_RESOURCES.items()))
def test_mcp_resources_answer_her_objects_like_made_up_ones(tenants, template, slots) -> None:
    for slot in slots:
        hers, invented, listed = anyio.run(_resource_answers, tenants, template, slot)
        assert hers == invented and SECRET not in hers
        assert not _traces(tenants, listed)


async def _mcp_listings(t: Tenants) -> str:
    async with _mcp(t, "bob") as client:
        templates = await client.list_resource_templates()
        prompts = await client.list_prompts()
        answers = [templates.model_dump_json(), prompts.model_dump_json()]
        for name in [p.name for p in prompts.prompts] or ["made-up"]:
            try:
                answers.append(str(await client.get_prompt(name, {})))
            except Exception as exc:  # noqa: BLE001 - the SDK raises the server's error
                answers.append(str(exc))
    return " ".join(answers)


def test_mcp_listings_show_nothing_of_hers(tenants) -> None:
    assert not _traces(tenants, anyio.run(_mcp_listings, tenants))
