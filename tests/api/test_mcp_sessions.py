"""MCP sessions and resumable streams belong to the caller that opened them. Spoken as raw
Streamable HTTP (what a hostile client sends, not what the SDK would): bob replays stream
ids and alice's real event ids from his own session, and uses alice's session id for every
method; each answer is the one a made-up id gets, and nothing of alice's reaches him."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.api.conftest import KeyedServer, fill_kb, keyed_server

pytestmark = pytest.mark.api

SECRET = "Marzipanolis"  # only in alice's memo
VERSION = "2025-11-25"
ACCEPT = "application/json, text/event-stream"


@dataclass
class Session:
    client: httpx.Client
    session_id: str

    def headers(self, session_id: str | None = None) -> dict[str, str]:
        return {
            "mcp-session-id": session_id or self.session_id,
            "mcp-protocol-version": VERSION,
            "accept": ACCEPT,
        }

    def post(self, body: dict, session_id: str | None = None) -> httpx.Response:
        return self.client.post("/mcp", json=body, headers=self.headers(session_id))


def _events(response: httpx.Response) -> list[tuple[str, str]]:
    """(event id, data) of each SSE event in a whole response body."""
    found, event_id = [], ""
    for line in response.text.splitlines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:") and line[5:].strip():
            found.append((event_id, line[5:].strip()))
    return found


def _open(client: httpx.Client) -> Session:
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    answer = client.post("/mcp", json=hello, headers={"accept": ACCEPT})
    assert answer.status_code == 200, answer.text
    session = Session(client, answer.headers["mcp-session-id"])
    ready = session.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert ready.status_code == 202, ready.text
    return session


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[KeyedServer]:
    data = tmp_path_factory.mktemp("mcp-sessions")
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob")) as server:
        with server.client("alice") as alice:
            fill_kb(alice, "private", {"memo.md": f"# Memo\n\nThe code word is {SECRET}."})
        yield server


@pytest.fixture(scope="module")
def alices(world: KeyedServer) -> Iterator[tuple[Session, list[str]]]:
    """Alice's session after she read her memo as request 3: its event ids."""
    file_id = next(f.id for f in world.app.files("private") if f.name == "memo.md")
    with world.client("alice") as client:
        session = _open(client)
        call = {"name": "read_file", "arguments": {"file_id": file_id}}
        read = session.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        assert read.status_code == 200 and SECRET in read.text, read.text
        yield session, [event_id for event_id, _ in _events(read) if event_id]


def _replay(session: Session, last_event_id: str) -> httpx.Response:
    headers = session.headers() | {"last-event-id": last_event_id, "accept": "text/event-stream"}
    return session.client.get("/mcp", headers=headers, timeout=10)


def test_another_caller_replays_nothing_of_alices_streams(world, alices):
    alice, event_ids = alices
    assert event_ids, "the server sends event ids (resumable streams are on)"
    with world.client("bob") as client:
        bob = _open(client)
        guesses = ["3/0", "3/1", "0/0", *event_ids]
        for guess in guesses:
            answer = _replay(bob, guess)
            assert SECRET not in answer.text, guess
            assert not _events(answer), (guess, answer.text)
    # Her own session still resumes: from just before her result, she gets it again.
    stream, _, tail = event_ids[-1].rpartition("/")
    number, _, secret = tail.partition(".")
    assert SECRET in _resumed(alice, f"{stream}/{int(number) - 1}.{secret}")


def _resumed(session: Session, last_event_id: str) -> str:
    """What a resumed stream sends until the missed result (it stays open for more)."""
    headers = session.headers() | {"last-event-id": last_event_id, "accept": "text/event-stream"}
    seen = ""
    with session.client.stream("GET", "/mcp", headers=headers, timeout=10) as answer:
        for line in answer.iter_lines():
            seen += line + "\n"
            if line.startswith("data:") and '"result"' in line:
                break
    return seen


def test_alices_session_answers_bob_as_an_unknown_one(world, alices):
    alice, _ = alices
    listing = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    with world.client("bob") as client:
        bob = _open(client)
        for method in ("post", "get", "delete"):
            answers = []
            for session_id in (alice.session_id, "f" * 32):
                headers = bob.headers(session_id)
                if method == "post":
                    answer = client.post("/mcp", json=listing, headers=headers)
                else:
                    answer = client.request(method.upper(), "/mcp", headers=headers)
                answers.append((answer.status_code, answer.text))
            assert answers[0] == answers[1] and answers[0][0] == 404, (method, answers)
    # Alice's own other key is another principal too.
    with world.client("alice") as client:
        other = client.post("/api/v1/auth/keys", json={"name": "second"}).json()["key"]
    second = httpx.Client(base_url=world.url, headers={"Authorization": f"Bearer {other}"})
    with second:
        answer = second.post("/mcp", json=listing, headers=alice.headers())
        assert answer.status_code == 404
    still = alice.post(listing)  # bob's DELETE ended nothing
    assert still.status_code == 200 and "read_file" in still.text
    assert json.loads(_events(still)[-1][1])["id"] == 7
