"""Side channels between tenants (issue 45), each tried as Bob (or Carol) against Alice on a
real server with keys: what one user stores must not show in another's scores, cache hits,
default targets, event streams, error answers, or as a 500 from a crafted number.

Timing is not asserted here (a busy machine makes any threshold flaky): the tests show the
mechanism that makes a right and a wrong guess take the same path (no cache entry of Alice's
is consulted for Bob); benchmarks/side_channels.py measures the latencies."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from citewell.app import Citewell
from citewell.config import Settings
from tests.api.conftest import run_server
from tests.api.test_access import user_keys
from tests.fake_web import FakeWebSite, serve_web

pytestmark = pytest.mark.api

SECRET_WORD = "Quokkazanzibar"
ABSENT_WORD = "Wombatvillage"
ALICE_SENTENCE = "Project Quokkazanzibar acquires the duck pond company for 9 million euros."


@dataclass
class World:
    url: str
    app: Citewell
    keys: dict[str, str]
    alice_kb: str
    site: str  # a fake web site on 127.0.0.1 (tests/fake_web.py)

    def client(self, who: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


def _text(client: httpx.Client, kb: str, name: str, content: str) -> dict[str, Any]:
    response = client.post(f"/api/v1/knowledge/{kb}/text", json={"name": name, "content": content})
    assert response.status_code == 201, response.text
    return response.json()


def _kb(client: httpx.Client, name: str) -> str:
    response = client.post("/api/v1/knowledge", json={"name": name})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm, shared_docs) -> Iterator[World]:
    settings = Settings.load(
        data_dir=tmp_path_factory.mktemp("side-channels"),
        llm_base_url=fake_llm.url + "/v1",
        web_fetch_allowlist="127.0.0.1",
    )
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    with (
        serve_web(FakeWebSite(shared_docs)) as site,
        run_server(settings, onnx_embedder, app) as url,
    ):
        keys = user_keys(app, url, ("alice", "bob", "carol"))
        world = World(url, app, keys, "", site)
        with world.client("alice") as alice:
            world.alice_kb = _kb(alice, "merger")
            for n in range(12):  # the word in many of Alice's chunks: a low idf over the table
                _text(alice, world.alice_kb, f"memo-{n}.md", f"{ALICE_SENTENCE} Memo {n}.")
        yield world


# --- 1. keyword statistics -------------------------------------------------------------------
def test_keyword_scores_do_not_tell_which_words_others_store(world):
    """Bob puts both probe words in a KB of his own, once each in like chunks: a word that
    Alice's private files hold scores as an absent one does."""
    with world.client("bob") as bob:
        kb = _kb(bob, "probes")
        _text(bob, kb, "a.md", f"Probe {SECRET_WORD} here.")
        _text(bob, kb, "b.md", f"Probe {ABSENT_WORD} here.")
        scores = {}
        for word in (SECRET_WORD, ABSENT_WORD):
            found = bob.post(
                "/api/v1/retrieval/query/collection",
                json={"collection_names": [kb], "query": word, "k": 5, "mode": "bm25"},
            )
            assert found.status_code == 200, found.text
            scores[word] = [r["bm25_score"] for r in found.json()["results"]]
    assert len(scores[SECRET_WORD]) == len(scores[ABSENT_WORD]) == 1
    assert scores[SECRET_WORD][0] == pytest.approx(scores[ABSENT_WORD][0], rel=1e-4)


# --- 2. the embedding cache ------------------------------------------------------------------
def test_a_right_guess_of_alices_sentence_is_embedded_like_a_wrong_one(world):
    """Bob's /v1/embeddings and his own text uploads never hit a vector that Alice's files
    put in the cache: the model runs for the right guess as for the wrong one."""
    wrong = ALICE_SENTENCE.replace("9 million", "8 million")
    embedder = world.app.embedder
    with world.client("bob") as bob:
        kb = _kb(bob, "guesses")
        for guess in (ALICE_SENTENCE + " Memo 5.", wrong + " Memo 5."):
            before = embedder.embedded
            answer = bob.post("/v1/embeddings", json={"model": "all-MiniLM-L6-v2", "input": guess})
            assert answer.status_code == 200, answer.text
            assert embedder.embedded == before + 1, guess  # computed, not taken from Alice's
        stored = [
            _text(bob, kb, f"guess-{n}.md", f"{text} Memo 3.")
            for n, text in enumerate((ALICE_SENTENCE, wrong))
        ]
    assert [s["chunks_embedded"] for s in stored] == [1, 1]
    with world.client("alice") as alice:  # her own cache still serves her
        before = embedder.embedded
        answer = alice.post(
            "/v1/embeddings",
            json={"model": "all-MiniLM-L6-v2", "input": f"{ALICE_SENTENCE} Memo 5."},
        )
        assert answer.status_code == 200 and embedder.embedded == before


# --- 2 (bytes), 3 and 6: a file's identity is its tenant's ---------------------------------------
def test_alices_exact_bytes_are_a_new_file_for_bob_with_nothing_of_hers(world):
    """Alice fetches a page by a URL holding a token; Bob uploads the same bytes: he gets a
    file of his own (parsed and embedded as any new file, another id, not the content's
    hash), and neither her URL nor her source shows anywhere he looks."""
    import hashlib

    page = f"{world.site}/fixture/wiki_duck.html?token=alice-secret-token"
    with world.client("alice") as alice:
        fetched = alice.post(
            "/api/v1/retrieval/process/web",
            json={"url": page, "collection_name": world.alice_kb},
        )
        assert fetched.status_code == 200, fetched.text
    data = httpx.get(page).content
    with world.client("bob") as bob:
        kb = _kb(bob, "copies")
        upload = bob.post(f"/api/v1/knowledge/{kb}/files", files={"file": ("duck.html", data)})
        assert upload.status_code == 201, upload.text
        mine = upload.json()
        views = [
            mine,
            bob.get(f"/api/v1/files/{mine['file']['id']}").json(),
            bob.get("/api/v1/files").json(),
            bob.post(
                "/api/v1/retrieval/query/collection",
                json={"collection_names": [kb], "query": "duck"},
            ).json(),
        ]
    assert not mine["linked"] and mine["chunks_embedded"] > 0
    assert mine["file"]["source"] == "upload" and mine["file"]["url"] == ""
    assert mine["file"]["id"] != hashlib.sha256(data).hexdigest()[:32]
    assert "alice-secret-token" not in json.dumps(views)
    records = [r for r in world.app.catalog.list_files() if r.sha256 == mine["file"]["sha256"]]
    assert len(records) == 2 and len({r.tenant for r in records}) == 2  # one file each


def test_a_link_keeps_the_source_and_url_it_came_in_with(world):
    """The same bytes in two of Alice's KBs, once fetched by URL and once uploaded: each
    KB shows how its copy came in."""
    page = f"{world.site}/fixture/wiki_duck.html?from=link-test"
    with world.client("alice") as alice:
        fetched_kb, uploaded_kb = _kb(alice, "by-url"), _kb(alice, "by-upload")
        fetched = alice.post(
            "/api/v1/retrieval/process/web", json={"url": page, "collection_name": fetched_kb}
        )
        assert fetched.status_code == 200, fetched.text
        data = httpx.get(page).content
        uploaded = alice.post(
            f"/api/v1/knowledge/{uploaded_kb}/files", files={"file": ("duck.html", data)}
        )
        assert uploaded.status_code == 201, uploaded.text
        listed = {
            kb: alice.get(f"/api/v1/knowledge/{kb}").json()["files"]
            for kb in (fetched_kb, uploaded_kb)
        }
        found = {
            kb: alice.post(
                "/api/v1/retrieval/query/collection",
                json={"collection_names": [kb], "query": "duck", "k": 1},
            ).json()["metadatas"][0][0]
            for kb in (fetched_kb, uploaded_kb)
        }
    assert uploaded.json()["linked"]  # her own bytes: stored once
    by_url, by_upload = listed[fetched_kb][0], listed[uploaded_kb][0]
    assert by_url["id"] == by_upload["id"]
    assert (by_url["source"], by_url["url"]) == ("url", page)
    assert (by_upload["source"], by_upload["url"]) == ("upload", "")
    # Search results say the same, per KB searched.
    assert (found[fetched_kb]["url"], found[fetched_kb]["source"]) == (page, page)
    assert (found[uploaded_kb]["url"], found[uploaded_kb]["source"]) == ("", "duck.html")


# --- 4. default targets ----------------------------------------------------------------------
def test_a_kb_named_like_carols_default_never_becomes_her_default(world):
    """Alice makes 'web-carol' and shares it with Carol (write): Carol's pages without a KB
    name still go to a KB Carol owns."""
    from citewell.auth.access import Access
    from citewell.engine.scoped import Scoped

    with world.client("alice") as alice:
        squat = _kb(alice, "web-carol")
        shared = alice.put(
            f"/api/v1/knowledge/{squat}/grants",
            json={"principal": "user:carol", "permission": "write"},
        )
        assert shared.status_code in (200, 201), shared.text
    carol = _access(world, "carol")
    with Scoped(world.app, carol).target_kb(None, "web") as target:
        assert target.owner_id == carol.user_id and target.id != squat
        assert target.name == "web-carol"
    assert isinstance(carol, Access)


def _access(world: World, who: str) -> Any:
    auth = world.app.catalog.engine
    from citewell.auth import AuthStore
    from citewell.auth.grants import GrantStore

    user, key = AuthStore(auth).identify(world.keys[who])  # type: ignore[misc]
    return GrantStore(auth).access(user, key)


# --- 5. event streams ------------------------------------------------------------------------
def test_a_stream_stops_when_the_grant_is_revoked(world):
    """Bob listens to a KB Alice shared with him; she revokes the grant and uploads: the
    stream ends with 'revoked' and never carries the new upload."""
    with world.client("alice") as alice:
        kb = _kb(alice, "shared-stream")
        granted = alice.put(f"/api/v1/knowledge/{kb}/grants", json={"principal": "user:bob"})
        assert granted.status_code in (200, 201), granted.text
    events: list[tuple[str, str]] = []
    opened = threading.Event()

    def listen() -> None:
        with world.client("bob") as bob:
            path = f"/api/v1/jobs/events?knowledge_base={kb}"
            with bob.stream("GET", path, timeout=30) as response:
                assert response.status_code == 200
                opened.set()
                name = ""
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: "):
                        events.append((name, line[6:]))
                        if name == "revoked":
                            return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert opened.wait(10)
    with world.client("alice") as alice:
        assert alice.delete(f"/api/v1/knowledge/{kb}/grants/user:bob").status_code == 204
        revoked_at = time.monotonic()
        queued = alice.post(
            f"/api/v1/knowledge/{kb}/files?wait=false",
            files={"file": ("after-revoke.md", b"Secret plans after the revocation.")},
        )
        assert queued.status_code == 202, queued.text
    listener.join(timeout=10)
    assert not listener.is_alive()
    assert time.monotonic() - revoked_at < 5
    assert events and events[-1][0] == "revoked"
    assert not any("after-revoke" in data for _, data in events)


# --- 6. ids and "not yours" ------------------------------------------------------------------
def test_another_users_job_answers_exactly_like_a_missing_one(world):
    with world.client("alice") as alice:
        queued = alice.post(
            f"/api/v1/knowledge/{world.alice_kb}/files?wait=false",
            files={"file": ("queued.md", b"Another private memo.")},
        )
        assert queued.status_code == 202, queued.text
        job_id = queued.json()["id"]
    missing = "0" * len(job_id)
    with world.client("bob") as bob:
        for suffix in ("", "/events", "/cancel", "/retry"):
            method = "GET" if suffix in ("", "/events") else "POST"
            theirs = bob.request(method, f"/api/v1/jobs/{job_id}{suffix}")
            nothing = bob.request(method, f"/api/v1/jobs/{missing}{suffix}")
            assert theirs.status_code == nothing.status_code == 404, suffix
            assert theirs.json()["code"] == nothing.json()["code"]
            assert theirs.json()["detail"].replace(job_id, missing) == nothing.json()["detail"]


# --- 7. numbers --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "tokens", [[-5], [2**63], [[1, 2], [-1]], [2**31]], ids=["negative", "2^63", "nested", "2^31"]
)
def test_out_of_range_token_ids_are_a_4xx(world, tokens):
    with world.client("bob") as bob:
        answer = bob.post("/v1/embeddings", json={"model": "all-MiniLM-L6-v2", "input": tokens})
    assert 400 <= answer.status_code < 500, answer.text


def test_huge_dimensions_are_a_4xx(world):
    with world.client("bob") as bob:
        answer = bob.post(
            "/v1/embeddings", json={"model": "all-MiniLM-L6-v2", "input": "x", "dimensions": 2**70}
        )
    assert 400 <= answer.status_code < 500, answer.text


@pytest.mark.parametrize("value", [1e400, -1e400, -5, 10**30, "NaN"])
def test_out_of_range_tool_arguments_are_tool_errors(world, value):
    """A model's view_file call with an offset of 1e400 (JSON's way to say infinity):
    a tool error the model reads, never an exception that fails the chat."""
    from citewell.answer.tools import ToolError, _int

    arguments = json.loads(json.dumps({"offset": value}))
    with pytest.raises(ToolError, match="offset"):
        _int(arguments, "offset", 0)


NON_FINITE = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 400)


@pytest.mark.parametrize("number", NON_FINITE)
def test_non_finite_and_huge_numbers_in_bodies_are_never_a_500(world, number):
    """Python's JSON parser (FastAPI's) reads NaN, Infinity and 1e400 (as inf): every numeric
    field gets a 4xx for them, or an answer, never a 500."""
    bodies = [
        ("/api/v1/retrieval/query/collection",
         f'{{"collection_names": ["{world.alice_kb}"], "query": "pond", "k": {number}}}'),
        ("/api/v1/retrieval/query/collection",
         f'{{"collection_names": ["x"], "query": "pond", "r": {number}, "hybrid": true}}'),
        ("/v1/embeddings",
         f'{{"model": "all-MiniLM-L6-v2", "input": "x", "dimensions": {number}}}'),
        ("/v1/embeddings", f'{{"model": "all-MiniLM-L6-v2", "input": [[1, {number}]]}}'),
        ("/v1/chat/completions",
         f'{{"model": "llama3", "messages": [{{"role": "user", "content": "hi"}}], '
         f'"temperature": {number}, "max_tokens": {number}, "top_k": {number}}}'),
        ("/api/v1/knowledge", f'{{"name": "n-{len(number)}", "settings": {{"top_k": {number}}}}}'),
    ]  # fmt: skip
    with world.client("bob") as bob:
        for path, body in bodies:
            answer = bob.post(path, content=body, headers={"content-type": "application/json"})
            assert answer.status_code < 500, (path, body, answer.text)


# --- 8. names ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["evil\nname", "bell\x07", "esc\x1b[31m", "rtl\u202ekcap"])
def test_names_with_control_characters_are_refused(world, name):
    with world.client("bob") as bob:
        made = bob.post("/api/v1/knowledge", json={"name": name})
        assert made.status_code == 400, made.text
        assert "control characters" in made.text
        key = bob.post("/api/v1/auth/keys", json={"name": name})
        assert key.status_code == 400, key.text
