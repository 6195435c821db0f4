"""What an attacker's pass found, each over real HTTP on a server with several users: huge
messages must not stall other users, lone surrogates must not give 500s, identical bytes must
not reveal another tenant's file, KB names must not be probeable, and nobody may lock a user
out of signing in. The upstream LLM is the wire-faithful fake of tests/fake_servers.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.config import Settings
from tests.api.conftest import run_server
from tests.fake_servers import FakeLLMService

HUGE = "typewriter " * 800_000  # 8.8 MB: under the 10 MB body limit
PASSWORDS = {"alice": "alice-password-long", "bob": "bob-password-long"}


@dataclass
class World:
    url: str
    app: Citewell
    keys: dict[str, str]

    def client(self, who: str, **headers: str) -> httpx.Client:
        if who in self.keys:
            headers["Authorization"] = f"Bearer {self.keys[who]}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm: FakeLLMService) -> Iterator[World]:
    settings = Settings.load(
        data_dir=tmp_path_factory.mktemp("hardening"),
        llm_base_url=fake_llm.url + "/v1",
        login_failures_per_address=3,  # small, so that each case needs few requests
        login_failures_per_name=8,
    )
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    users = AuthStore(app.catalog.engine)
    admin = users.create_user("root", role="admin")
    keys = {"admin": users.create_key(admin.id, "tests")[1]}
    for name, password in PASSWORDS.items():
        user = users.create_user(name, password=password)
        keys[name] = users.create_key(user.id, "tests")[1]
    with run_server(settings, onnx_embedder, app) as url:
        yield World(url, app, keys)


def _kb(client: httpx.Client, name: str) -> dict[str, Any]:
    response = client.post("/api/v1/knowledge", json={"name": name})
    assert response.status_code == 201, response.text
    return response.json()


def _text(client: httpx.Client, kb_id: str, name: str, content: str) -> dict[str, Any]:
    response = client.post(
        f"/api/v1/knowledge/{kb_id}/text", json={"name": name, "content": content}
    )
    assert response.status_code == 201, response.text
    return response.json()


def _raw_json(client: httpx.Client, method: str, path: str, body: Any) -> httpx.Response:
    """JSON as the standard library writes it: lone surrogates stay \\ud800 escapes (httpx
    would fail to encode them as UTF-8 before sending)."""
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    return client.request(method, path, content=data, headers=headers)


# --- 1. one user cannot stall everyone ------------------------------------------------------
# How much others wait meanwhile is a benchmark (benchmarks/big_messages.py, BENCHMARKS.md):
# timings compared inside the suite failed on a busy machine. The test holds the mechanism:
# an oversized chat is refused from its headers, before a byte of its body is read.
def _declared_only(url: str, key: str, path: str, length: int) -> tuple[int, dict[str, Any]]:
    """Send only the headers of a POST declaring ``length`` body bytes; the answer that
    comes back while the body is still unsent."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {where.netloc}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        sock.sendall(head.encode())
        reply = sock.makefile("rb")
        status = int(reply.readline().split()[1])
        headers = dict(
            line.decode().lower().split(": ", 1) for line in iter(reply.readline, b"\r\n")
        )
        body = reply.read(int(headers["content-length"]))
    return status, json.loads(body)


def test_huge_chats_are_refused_before_their_bodies_are_read(world):
    with world.client("alice") as alice:
        alice_kb = _kb(alice, "alice-typewriters")
        _text(alice, alice_kb["id"], "notes.txt", "Typewriters were loud machines.")
    for path in ("/v1/chat/completions", "/api/v1/rag/chat/completions"):
        status, body = _declared_only(world.url, world.keys["alice"], path, len(HUGE) + 200)
        assert status == 400 and body["code"] == "context_length_exceeded", body
    # Sent in full and back to back from another process, every one is refused the same way.
    attacker = subprocess.run(
        [sys.executable, "-c", FLOOD, world.url, world.keys["alice"], alice_kb["id"]],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    answers = [json.loads(line) for line in attacker.stdout.splitlines()]
    assert len(answers) >= 3 and {(a["status"], a["code"]) for a in answers} == {
        (400, "context_length_exceeded")
    }, answers[:3]


# Three threads sending 8.8 MB chats back to back for 8 seconds; one JSON line per answer.
FLOOD = """
import json, sys, threading, time
import httpx
url, key, kb = sys.argv[1:4]
body = {"model": "llama3", "knowledge_collections": [kb],
        "messages": [{"role": "user", "content": "typewriter " * 800000}]}
data = json.dumps(body).encode()
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
end = time.monotonic() + 8
lock = threading.Lock()
def flood():
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        while time.monotonic() < end:
            started = time.perf_counter()
            r = client.post("/v1/chat/completions", content=data)
            answer = {"status": r.status_code, "code": r.json().get("code"),
                      "seconds": time.perf_counter() - started}
            with lock:
                print(json.dumps(answer), flush=True)
threads = [threading.Thread(target=flood) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def test_a_long_conversation_keeps_its_newest_turns(world, fake_llm):
    old = "An old remark about the weather. " * 1500  # ~9,000 tokens: over the window
    body = {
        "model": "llama3",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": old},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "What is a typewriter?"},
        ],
    }
    with world.client("alice") as alice:
        response = alice.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert "earlier message(s) left out" in " ".join(response.json()["warnings"])
    sent = fake_llm.requests[-1][1]["messages"]
    assert [m["role"] for m in sent] == ["system", "assistant", "user"]
    assert "old remark" not in json.dumps(sent)


def test_huge_search_queries_cost_what_short_ones_do(world):
    with world.client("alice") as alice:
        kb = _kb(alice, "alice-search-bounds")
        _text(alice, kb["id"], "t.txt", "The typewriter was invented in 1868.")
        for path, body in [
            ("/api/v1/retrieval/query/collection", {"collection_names": [kb["id"]]}),
            ("/api/v1/retrieval/query/doc", {"collection_name": _file_id(alice, kb["id"])}),
        ]:
            started = time.perf_counter()
            response = alice.post(path, json={**body, "query": HUGE})
            assert response.status_code == 200, response.text
            assert time.perf_counter() - started < 5
        too_long = alice.post(
            f"/api/v1/knowledge/{kb['id']}/text",
            json={"name": "big.txt", "content": "word " * 10},
        )
        assert too_long.status_code == 201


def _file_id(client: httpx.Client, kb_id: str) -> str:
    files = client.get(f"/api/v1/knowledge/{kb_id}").json()["files"]
    return str(files[0]["id"])


# --- 2. lone surrogates ------------------------------------------------------------------------
def test_lone_surrogates_get_answers_not_500s(world):
    lone = "a \ud800 b \udfff c"
    with world.client("alice") as alice:
        kb = _raw_json(alice, "POST", "/api/v1/knowledge", {"name": f"odd {lone}"})
        assert kb.status_code == 201, kb.text
        assert kb.json()["name"] == "odd a \ufffd b \ufffd c"
        kb_id = kb.json()["id"]
        text = _raw_json(
            alice,
            "POST",
            f"/api/v1/knowledge/{kb_id}/text",
            {"name": f"n{lone}.txt", "content": f"Typewriters {lone} were loud."},
        )
        assert text.status_code == 201, text.text
        chats = [
            {"messages": [{"role": "user", "content": f"typewriters {lone}"}]},
            {"messages": [{"role": "system", "content": lone}, {"role": "user", "content": "x"}]},
            {"messages": [{"role": "user", "content": lone}], "stream": True},
            {"messages": [{"role": "user", "content": "hi"}], "knowledge_collections": [lone]},
        ]
        for chat in chats:
            body = {"model": "llama3", "knowledge_collections": [kb_id], **chat}
            if "knowledge_collections" in chat:
                body["knowledge_collections"] = [kb_id, *chat["knowledge_collections"]]
            response = _raw_json(alice, "POST", "/v1/chat/completions", body)
            assert response.status_code == 200, (chat, response.text)
        search = _raw_json(
            alice,
            "POST",
            "/api/v1/retrieval/query/collection",
            {"collection_names": [kb_id, lone], "query": lone},
        )
        assert search.status_code == 404, search.text  # the unknown KB, named plainly
        assert "\ufffd" in search.json()["detail"]
        login = _raw_json(alice, "POST", "/api/v1/auth/login", {"name": lone, "password": lone})
        assert login.status_code == 401, login.text


# --- 3. identical bytes -------------------------------------------------------------------------
def test_identical_bytes_show_each_tenant_only_their_own_name(world, shared_docs: Path):
    data = (shared_docs / "multi_page.pdf").read_bytes()
    with world.client("admin") as admin, world.client("alice") as alice:
        private = _kb(admin, "admin-private")
        stored = admin.post(
            f"/api/v1/knowledge/{private['id']}/files", files={"file": ("multi_page.pdf", data)}
        )
        assert stored.status_code == 201, stored.text
        time.sleep(1.1)  # so that her link's time differs from the admin's
        hers = _kb(alice, "alice-papers")
        upload = alice.post(
            f"/api/v1/knowledge/{hers['id']}/files", files={"file": ("mine.pdf", data)}
        )
        assert upload.status_code == 201, upload.text
        seen = upload.json()
        assert seen["file"]["name"] == "mine.pdf" and not seen["linked"]
        assert seen["file"]["created_at"] > stored.json()["file"]["created_at"]
        file_id = seen["file"]["id"]
        views = [
            alice.get("/api/v1/files").json(),
            alice.get(f"/api/v1/files/{file_id}").json(),
            alice.get(f"/api/v1/knowledge/{hers['id']}").json(),
            alice.get("/api/v1/rag/files").json(),
            alice.post(
                "/api/v1/retrieval/query/collection",
                json={"collection_names": [hers["id"]], "query": "page"},
            ).json(),
            alice.post(
                "/v1/chat/completions",
                json={
                    "model": "llama3",
                    "knowledge_collections": [hers["id"]],
                    "messages": [{"role": "user", "content": "What is on the pages?"}],
                },
            ).json(),
        ]
        text = json.dumps(views)
        assert "mine.pdf" in text and "multi_page" not in text, text[:2000]
        assert views[5]["sources"] and all(
            s["metadata"]["name"] == "mine.pdf" for s in views[5]["sources"]
        )
        download = alice.get(f"/api/v1/files/{file_id}/content")
        assert "mine.pdf" in download.headers["content-disposition"]

        # Each tenant's copy is a file of its own (decision 0020): another id, stored apart.
        admins = stored.json()["file"]["id"]
        assert admins != file_id
        deleted = alice.delete(f"/api/v1/files/{file_id}")
        assert deleted.status_code == 204, deleted.text
        assert alice.get(f"/api/v1/files/{file_id}").status_code == 404
        assert world.app.catalog.get_file(file_id) is None  # no link left: bytes gone
        kept = admin.get(f"/api/v1/files/{admins}")
        assert kept.status_code == 200 and kept.json()["name"] == "multi_page.pdf"
        found = admin.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": [private["id"]], "query": "page"},
        ).json()
        assert found["documents"][0]
        assert admin.delete(f"/api/v1/files/{admins}").status_code == 204
        assert world.app.catalog.get_file(admins) is None


# --- 4. KB names per owner ---------------------------------------------------------------------
def test_kb_names_are_per_owner_and_never_probeable(world):
    with world.client("alice") as alice, world.client("bob") as bob:
        a = _kb(alice, "handbook")
        b = _kb(bob, "handbook")  # no "exists already": nothing tells bob alice has one
        assert a["id"] != b["id"]
        again = bob.post("/api/v1/knowledge", json={"name": "handbook"})
        assert again.status_code == 409 and again.json()["code"] == "name_taken"
        other = _kb(bob, "bob-other")
        renamed = bob.patch(f"/api/v1/knowledge/{other['id']}", json={"name": "handbook"})
        assert renamed.status_code == 409 and renamed.json()["code"] == "name_taken"
        shared = alice.put(
            f"/api/v1/knowledge/{a['id']}/grants",
            json={"principal": "user:bob", "permission": "read"},
        )
        assert shared.status_code == 200, shared.text
        assert bob.get("/api/v1/knowledge/handbook").json()["id"] == b["id"]  # his own first
        assert alice.get("/api/v1/knowledge/handbook").json()["id"] == a["id"]
    with world.client("admin") as admin:
        ambiguous = admin.get("/api/v1/knowledge/handbook")
        assert ambiguous.status_code == 409, ambiguous.text
        body = ambiguous.json()
        assert body["code"] == "ambiguous_name"
        assert a["id"] in body["detail"] and b["id"] in body["detail"]
        assert admin.get(f"/api/v1/knowledge/{a['id']}").status_code == 200


# --- 5. sign-in cannot be turned into a lock-out -----------------------------------------------
def _login(world: World, name: str, password: str, address: str) -> httpx.Response:
    with world.client("nobody", **{"X-Forwarded-For": address}) as client:
        return client.post("/api/v1/auth/login", json={"name": name, "password": password})


def test_wrong_passwords_cannot_lock_a_user_out(world):
    right = PASSWORDS["bob"]
    assert _login(world, "bob", right, "127.0.0.1").status_code == 200  # a known address
    for _ in range(3):
        assert _login(world, "bob", "guess", "127.0.0.2").status_code == 401
    blocked = _login(world, "bob", "guess", "127.0.0.2")
    assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) >= 1
    assert "sign-ins" in blocked.json()["detail"]
    assert "rate_limit_per_minute" not in blocked.json()["detail"]
    assert _login(world, "bob", right, "127.0.0.1").status_code == 200  # still gets in

    # Guessing from many addresses: past the per-name limit, new addresses wait whatever
    # the password (no oracle), known ones go on.
    for address in ("127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7"):
        assert _login(world, "bob", "guess", address).status_code == 401  # 8 failures now
    new_address = _login(world, "bob", right, "127.0.0.9")
    assert new_address.status_code == 429, new_address.text
    assert "paused for new addresses" in new_address.json()["detail"]
    assert _login(world, "bob", right, "127.0.0.1").status_code == 200
    assert _login(world, "alice", PASSWORDS["alice"], "127.0.0.2").status_code == 200


# --- also found -----------------------------------------------------------------------------------
def test_a_blocked_url_leaves_no_empty_kb_and_warnings_name_no_ids(world):
    with world.client("alice") as alice:
        before = {kb["name"] for kb in alice.get("/api/v1/knowledge").json()}
        response = alice.post(
            "/v1/chat/completions",
            json={
                "model": "llama3",
                "messages": [{"role": "user", "content": "Summarise #http://127.0.0.1:9/x"}],
            },
        )
        assert response.status_code == 200, response.text
        assert any("127.0.0.1" in w for w in response.json()["warnings"])
        after = {kb["name"] for kb in alice.get("/api/v1/knowledge").json()}
        assert after == before, after - before
        scoped = alice.post("/api/v1/auth/keys", json={"name": "ro", "read_only": True})
        ids = {kb["id"] for kb in alice.get("/api/v1/knowledge").json()}
    with httpx.Client(
        base_url=world.url, headers={"Authorization": f"Bearer {scoped.json()['key']}"}
    ) as read_only:
        answer = read_only.post(
            "/v1/chat/completions",
            json={
                "model": "llama3",
                "messages": [{"role": "user", "content": "Read #https://example.com/"}],
            },
        )
    assert answer.status_code == 200, answer.text
    warnings = " ".join(answer.json()["warnings"])
    assert "example.com" in warnings and not any(i in warnings for i in ids), warnings


def test_a_file_name_of_thousands_of_characters_is_explained(world):
    with world.client("alice") as alice:
        kb = _kb(alice, "alice-long-names")
        response = alice.post(
            f"/api/v1/knowledge/{kb['id']}/files", files={"file": ("n" * 5000 + ".txt", b"hi")}
        )
    assert response.status_code == 400, response.text
    assert "file name" in response.json()["detail"]
