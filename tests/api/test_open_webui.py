"""Open WebUI itself as the client: Citewell is its OpenAI connection (chat and embeddings).

Open WebUI runs from its own virtual environment (scripts/test installs it into
.venv-openwebui, offline once installed), on 127.0.0.1, and is stopped by the test. Its chat
goes to a Citewell preset; the LLM behind Citewell is the wire-faithful fake, which records
what it was sent. Checked: the sources Open WebUI saves on the message (its citation chips)
are one per chunk, carry the chunk text and keep Citewell's numbers, and Open WebUI's
background tasks (title, tags, follow-ups) reach the LLM with no retrieved context.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.api, pytest.mark.openwebui]

OPEN_WEBUI = REPO / ".venv-openwebui" / "bin" / "open-webui"
QUESTION = "What do ducks eat?"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environment(citewell_url: str, data: Path) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    return {
        **keep,
        "DATA_DIR": str(data),
        "WEBUI_SECRET_KEY": "test-only-secret",
        "WEBUI_AUTH": "False",  # one local admin, signed in without a password prompt
        "OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
        "ENABLE_OLLAMA_API": "false",
        "ENABLE_VERSION_UPDATE_CHECK": "false",
        "ANONYMIZED_TELEMETRY": "false",
        "DO_NOT_TRACK": "true",
        "SCARF_NO_ANALYTICS": "true",
        "OPENAI_API_BASE_URLS": citewell_url + "/v1",
        "OPENAI_API_KEYS": "unused",
        # Open WebUI's own RAG embeds through Citewell too: no model download at start-up.
        "RAG_EMBEDDING_ENGINE": "openai",
        "RAG_OPENAI_API_BASE_URL": citewell_url + "/v1",
        "RAG_OPENAI_API_KEY": "unused",
        "RAG_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        # Citewell's MCP server as one of Open WebUI's tool servers (auth=none on this
        # Citewell: the key is sent and not needed; tests/api/test_mcp.py covers keys).
        "TOOL_SERVER_CONNECTIONS": json.dumps(
            [
                {
                    "type": "mcp",
                    "url": citewell_url + "/mcp",
                    "auth_type": "bearer",
                    "key": "unused",
                    "config": {"enable": True},
                    "info": {"id": "citewell", "name": "Citewell"},
                }
            ]
        ),
    }


@pytest.fixture(scope="module")
def open_webui(server, ducks_sdk, tmp_path_factory) -> Iterator[str]:
    assert OPEN_WEBUI.exists(), (
        f"{OPEN_WEBUI} is missing: scripts/test installs Open WebUI there "
        "(or run scripts/setup-openwebui)"
    )
    data = tmp_path_factory.mktemp("open-webui")
    port = _free_port()
    log = (data / "open-webui.log").open("wb")
    process = subprocess.Popen(
        [str(OPEN_WEBUI), "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=data,
        env=_environment(server.url, data),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, data / "open-webui.log")
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert process.poll() is None, f"Open WebUI exited:\n{log.read_text()[-3000:]}"
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise AssertionError(f"Open WebUI did not start in 240 s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def owui(open_webui) -> Iterator[httpx.Client]:
    signin = httpx.post(
        open_webui + "/api/v1/auths/signin",
        json={"email": "admin@localhost", "password": "admin"},
        timeout=30,
    )
    assert signin.status_code == 200, signin.text
    headers = {"Authorization": f"Bearer {signin.json()['token']}"}
    with httpx.Client(base_url=open_webui, headers=headers, timeout=60) as client:
        yield client


def _ask(owui: httpx.Client, model: str, **extra: Any) -> dict:
    """Ask as Open WebUI's page does (a new chat, streamed, answered in the background),
    then read the saved assistant message once it is done. ``extra``: more of the request
    (the tools chosen for the chat)."""
    user_id, answer_id = str(uuid.uuid4()), str(uuid.uuid4())
    started = owui.post(
        "/api/chat/completions",
        json={
            "model": model,
            "messages": [{"role": "user", "content": QUESTION}],
            "stream": True,
            "parent_id": None,
            "id": answer_id,
            "user_message": {"id": user_id, "role": "user", "content": QUESTION},
            "session_id": "test-session",  # no socket: events are saved all the same
            "background_tasks": {"title_generation": True, "tags_generation": True},
            **extra,
        },
    )
    assert started.status_code == 200, started.text
    chat_id = started.json()["chat_id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        chat = owui.get(f"/api/v1/chats/{chat_id}").json()["chat"]
        message = chat["history"]["messages"].get(answer_id, {})
        if message.get("done"):
            return {"chat": chat, "message": message}
        time.sleep(0.5)
    raise AssertionError(f"the answer was not saved in 120 s: {message}")


def test_models_come_from_citewell(owui):
    models = {m["id"] for m in owui.get("/api/models").json()["data"]}
    assert {"duck-expert", "fake-llm"} <= models


def test_saved_sources_are_one_per_chunk_with_citewell_numbers(owui, ducks_sdk, fake_llm):
    fake_llm.requests.clear()
    saved = _ask(owui, "duck-expert")["message"]
    # Open WebUI offers its built-in tools and the fake LLM calls the first one, so the answer
    # comes in a second round, with the tool's result: it must not add sources again.
    rounds = [b for _, b in fake_llm.requests if _last_user(b) == QUESTION]
    assert any(m["role"] == "tool" for m in rounds[-1]["messages"])
    reply = ducks_sdk.chat.completions.create(
        model="duck-expert", messages=[{"role": "user", "content": QUESTION}]
    )
    expected = reply.model_extra["sources"]
    assert "[1]" in saved["content"]
    sources = saved["sources"]
    assert len(sources) == len(expected)
    for mine, theirs in zip(expected, sources, strict=True):
        assert theirs["document"] == [mine["content"]]
        assert theirs["source"]["name"] == "wiki_duck.html"
        assert theirs["metadata"][0]["name"] == "wiki_duck.html"
    # Open WebUI numbers [n] by distinct metadata[].source, in order: n must be Citewell's n.
    distinct = list(dict.fromkeys(s["metadata"][0]["source"] for s in sources))
    assert len(distinct) == len(expected)


def test_background_tasks_get_no_retrieved_context(owui, fake_llm):
    fake_llm.requests.clear()
    _ask(owui, "duck-expert")
    deadline = time.monotonic() + 60
    tasks: list[dict] = []
    while time.monotonic() < deadline and not tasks:
        tasks = [b for _, b in fake_llm.requests if "### Task:" in _last_user(b)]
        time.sleep(0.5)
    assert tasks, "Open WebUI sent no background task"
    for body in tasks:
        assert not any("<source" in (m.get("content") or "") for m in body["messages"])
    answers = [b for _, b in fake_llm.requests if _last_user(b) == QUESTION]
    assert answers and "<source" in answers[0]["messages"][0]["content"]


def test_open_webui_calls_citewell_search_through_mcp(owui, ducks_sdk, fake_llm):
    """A chat with Citewell's MCP server among its tools: the model (the fake, called by Open
    WebUI directly through Citewell's /v1) calls Citewell's search tool; Open WebUI runs it
    over MCP and hands the passages, with their citation fields, back to the model."""
    fake_llm.requests.clear()
    fake_llm.tool_script = [
        [("citewell_search", {"query": "what do ducks eat", "knowledge_bases": ["ducks"]})]
    ]
    saved = _ask(owui, "llama3", tool_ids=["server:mcp:citewell"])["message"]
    rounds = [b for _, b in fake_llm.requests if _last_user(b) == QUESTION]
    offered = {t["function"]["name"] for t in rounds[0].get("tools") or []}
    assert {"citewell_search", "citewell_ask", "citewell_read_file"} <= offered
    results = [m for m in rounds[-1]["messages"] if m["role"] == "tool"]
    assert results, "the tool's result never reached the model"
    result = str(results[-1]["content"])
    assert "wiki_duck.html" in result and "source_id" in result and "/#/file/" in result
    assert saved["content"]


def _last_user(body: dict) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else str(content)


# --- Open WebUI's knowledge API: the same requests to Open WebUI and to Citewell --------------
MISSING_KB = "00000000-0000-4000-8000-000000000000"


def _shape_differences(theirs: Any, mine: Any, where: str = "") -> list[str]:
    """Where Citewell's JSON lacks a field of Open WebUI's, or has another type there
    (null matches any type: Open WebUI's optional fields; extra fields of Citewell's are
    allowed). Lists are compared by their first items."""
    if theirs is None or mine is None or where.endswith(".meta.data"):
        return []  # meta.data: whatever the uploader sent along, echoed
    if isinstance(theirs, dict):
        if not isinstance(mine, dict):
            return [f"{where}: an object in Open WebUI, {type(mine).__name__} in Citewell"]
        found = [f"{where}.{k}: missing" for k in theirs if k not in mine]
        for key in theirs.keys() & mine.keys():
            found += _shape_differences(theirs[key], mine[key], f"{where}.{key}")
        return found
    if isinstance(theirs, list):
        if not isinstance(mine, list):
            return [f"{where}: a list in Open WebUI, {type(mine).__name__} in Citewell"]
        return _shape_differences(theirs[0], mine[0], f"{where}[0]") if theirs and mine else []
    kinds = (bool, int, float, str)
    kind = next(k for k in kinds if isinstance(theirs, k))
    same = isinstance(mine, kind) and (kind is not int or not isinstance(mine, bool))
    return [] if same else [f"{where}: {kind.__name__} in Open WebUI, {mine!r} in Citewell"]


class Both:
    """Sends each request to Open WebUI and to Citewell; ``{kb}``, ``{dir}`` and ``{file}``
    in a path or body are each server's own id of that thing."""

    def __init__(self, owui: httpx.Client, citewell: httpx.Client) -> None:
        self.clients = {"owui": owui, "citewell": citewell}
        self.ids: dict[str, dict[str, str]] = {"owui": {}, "citewell": {}}

    def send(self, method: str, path: str, **kwargs: Any) -> tuple[Any, Any]:
        answers = {}
        for side, client in self.clients.items():
            ids = self.ids[side]
            filled = path.format(**ids)
            body = kwargs.get("json")
            if body is not None:
                body = json.loads(json.dumps(body) % ids) if "%(" in json.dumps(body) else body
            extra = {k: v for k, v in kwargs.items() if k != "json"}
            data = extra.pop("data", None)
            if data is not None:
                extra["data"] = {k: v % ids for k, v in data.items()}
            answers[side] = client.request(method, filled, json=body, **extra)
        theirs, mine = answers["owui"], answers["citewell"]
        assert theirs.status_code == mine.status_code, (path, theirs.text, mine.text)
        if theirs.status_code == 200:
            problems = _shape_differences(theirs.json(), mine.json())
            assert not problems, (path, problems, theirs.json(), mine.json())
        return theirs.json(), mine.json()

    def remember(self, name: str, theirs: str, mine: str) -> None:
        self.ids["owui"][name], self.ids["citewell"][name] = theirs, mine


@pytest.fixture
def both(owui, server) -> Iterator[Both]:
    with server.client() as citewell:
        yield Both(owui, citewell)


def test_knowledge_api_answers_like_open_webui(both) -> None:
    theirs, mine = both.send(
        "POST", "/api/v1/knowledge/create", json={"name": "shapes", "description": "same"}
    )
    both.remember("kb", theirs["id"], mine["id"])
    both.send("GET", "/api/v1/knowledge/")
    theirs, mine = both.send("POST", "/api/v1/knowledge/{kb}/dirs/create", json={"name": "docs"})
    both.remember("dir", theirs["id"], mine["id"])
    metadata = '{"knowledge_id": "%(kb)s", "directory_id": "%(dir)s"}'
    theirs, mine = both.send(
        "POST",
        "/api/v1/files/?process_in_background=false",
        files={"file": ("swans.txt", b"Swans mate for life and guard their nests fiercely.")},
        data={"metadata": metadata},
    )
    both.remember("file", theirs["id"], mine["id"])
    _, listed = both.send("GET", "/api/v1/knowledge/{kb}/files")
    assert listed["items"][0]["directory_id"] == both.ids["citewell"]["dir"]
    both.send("GET", "/api/v1/knowledge/{kb}/files?directory_id={dir}")
    both.send("GET", "/api/v1/knowledge/{kb}")
    manifest = [
        {
            "path": "docs",
            "filename": "swans.txt",
            "checksum": hashlib.sha256(
                b"Swans mate for life and guard their nests fiercely."
            ).hexdigest(),
            "size": 51,
        },
        {"path": "docs/birds", "filename": "geese.md", "checksum": "a" * 64, "size": 3},
    ]
    theirs, mine = both.send(
        "POST", "/api/v1/knowledge/{kb}/sync/diff", json={"manifest": manifest}
    )
    for field in ("added", "modified", "deleted", "mkdir", "unmodified_count"):
        assert theirs[field] == mine[field], field
    both.send(
        "POST",
        "/api/v1/knowledge/{kb}/file/move",
        json={"file_id": "%(file)s", "directory_id": None},
    )
    both.send("POST", "/api/v1/knowledge/{kb}/dirs/{dir}/update", json={"name": "manual"})
    held = both.send(
        "POST",
        "/api/v1/files/?process_in_background=false",
        files={"file": ("owls.txt", b"Owls hunt at night and swallow their prey whole.")},
    )
    both.remember("held", held[0]["id"], held[1]["id"])
    both.send("POST", "/api/v1/knowledge/{kb}/file/add", json={"file_id": "%(held)s"})
    both.send("POST", "/api/v1/knowledge/{kb}/file/remove", json={"file_id": "%(held)s"})
    both.send("POST", "/api/v1/knowledge/{kb}/sync/cleanup", json={"file_ids": [], "dir_ids": []})
    both.send("DELETE", "/api/v1/knowledge/{kb}/dirs/{dir}/delete")
    both.send("POST", "/api/v1/knowledge/{kb}/reset")
    both.remember("missing", MISSING_KB, "0" * 32)
    both.send("POST", "/api/v1/knowledge/{missing}/file/add", json={"file_id": "%(file)s"})
    both.send("POST", "/api/v1/knowledge/{missing}/sync/diff", json={"manifest": []})
    both.send("DELETE", "/api/v1/knowledge/{kb}/delete")
