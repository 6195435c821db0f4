"""A real Citewell server on 127.0.0.1 (uvicorn in a thread), stopped after the tests."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from citewell.api.app import create_app
from citewell.app import Citewell
from citewell.config import Settings
from citewell.testing.asgi import served
from tests.fake_servers import FakeLLMService, FakeService, serve


@dataclass
class Server:
    url: str
    app: Any
    llm: FakeLLMService | None

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)


@contextmanager
def run_server(
    settings: Settings, embedder: Any, citewell: Citewell | None = None, port: int = 0
) -> Iterator[str]:
    citewell = citewell or Citewell.from_settings(settings, embedder=embedder)
    with served(create_app(settings, citewell), port=port) as url:
        yield url


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FakeLLMService]:
    service = FakeLLMService()
    with serve(service) as url:
        service.url = url
        yield service


@pytest.fixture(scope="module")
def server(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[Server]:
    """Server with the fake LLM as its upstream."""
    data = tmp_path_factory.mktemp("server-data")
    settings = Settings.load(
        data_dir=data,
        auth="none",  # the seed's RAG API: no keys (tests/api/test_access.py covers keys)
        llm_base_url=fake_llm.url + "/v1",
        model_presets='[{"id": "duck-expert", "knowledge": ["ducks"], '
        '"base_model": "llama3", "system": "Be brief."}]',
    )
    with run_server(settings, onnx_embedder) as url:
        yield Server(url, None, fake_llm)


@pytest.fixture(scope="module")
def extractive_server(tmp_path_factory, onnx_embedder) -> Iterator[Server]:
    """Server with no LLM configured: answers are extractive."""
    data = tmp_path_factory.mktemp("extractive-data")
    with run_server(Settings.load(data_dir=data, auth="none"), onnx_embedder) as url:
        yield Server(url, None, None)


@pytest.fixture(scope="module")
def ducks_sdk(server, shared_docs):
    """The official openai SDK on the fake-LLM server, with the 'ducks' KB in place."""
    from openai import OpenAI

    with server.client() as c:
        ensure_kb(c, "ducks")
        upload(c, "ducks", shared_docs / "wiki_duck.html")
    return OpenAI(base_url=server.url + "/v1", api_key="unused")


def upload(client: httpx.Client, kb: str, path: Path, name: str | None = None) -> dict[str, Any]:
    with path.open("rb") as handle:
        response = client.post(
            f"/api/v1/knowledge/{kb}/files", files={"file": (name or path.name, handle)}
        )
    assert response.status_code == 201, response.text
    return response.json()


def wait_for(
    client: httpx.Client, path: str, done: Callable[[Any], bool], timeout: float = 120.0
) -> Any:
    """GET ``path`` until ``done`` says yes about its JSON body; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(path).json()
        if done(body):
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.05)


def ensure_kb(client: httpx.Client, name: str) -> dict[str, Any]:
    response = client.post("/api/v1/knowledge", json={"name": name})
    if response.status_code == 409 and response.json()["code"] == "name_taken":
        return client.get(f"/api/v1/knowledge/{name}").json()
    assert response.status_code == 201, response.text
    return response.json()


def assert_citations_resolve(body: dict[str, Any]) -> None:
    """Every [n] in the answer is the id of exactly one returned source."""
    import re

    ids = [s["id"] for s in body["sources"]]
    assert len(ids) == len(set(ids))
    for number in re.findall(r"\[(\d+)\]", body["choices"][0]["message"]["content"]):
        assert int(number) in ids, (number, ids)


@pytest.fixture(scope="module")
def copy_file(tmp_path_factory):
    def copy(source: Path, name: str) -> Path:
        target = tmp_path_factory.mktemp("copies") / name
        shutil.copy(source, target)
        return target

    return copy


def stored_vectors(store: Any) -> dict[str, Any]:
    """Chunk id -> its vector as the chunk store holds it, read from the backend itself
    (the store's API hands out chunks, not vectors)."""
    import numpy as np

    if hasattr(store, "_table"):  # LanceDB
        rows = store._table.search().select(["id", "vector"]).limit(None).to_list()
        return {r["id"]: np.array(r["vector"], dtype=np.float32) for r in rows}
    from sqlalchemy import text

    with store.engine.connect() as db:  # PostgreSQL: pgvector's text form
        rows = db.execute(text(f"SELECT id, vector::text FROM {store.table}")).all()
    return {i: np.array(v.strip("[]").split(","), dtype=np.float32) for i, v in rows}


@dataclass
class KeyedServer:
    """A server with authentication on, keys for an admin and some users, the fake LLM as
    its LLM and a fake rerank API that settings may switch to."""

    url: str
    app: Any
    settings: Settings
    keys: dict[str, str]
    llm: FakeLLMService
    reranker_url: str

    def client(self, who: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


@contextmanager
def keyed_server(
    data_dir: Path, embedder: Any, llm: FakeLLMService, users: tuple[str, ...], **overrides: Any
) -> Iterator[KeyedServer]:
    from tests.api.test_access import user_keys

    settings = Settings.load(data_dir=data_dir, llm_base_url=llm.url + "/v1", **overrides)
    app = Citewell.from_settings(settings, embedder=embedder)
    with serve(FakeService()) as rerank_url, run_server(settings, embedder, app) as url:
        keys = user_keys(app, url, users)
        yield KeyedServer(url, app, settings, keys, llm, rerank_url + "/v1/rerank")


def fill_kb(client: httpx.Client, kb: str, docs: dict[str, str]) -> None:
    """Make KB ``kb`` and upload ``docs`` (path → text) into their folders, as a user does."""
    assert client.post("/api/v1/knowledge", json={"name": kb}).status_code == 201
    for path, text in docs.items():
        folder, _, name = path.rpartition("/")
        sent = client.post(
            f"/api/v1/knowledge/{kb}/files?folder={folder}", files={"file": (name, text.encode())}
        )
        assert sent.status_code in (200, 201), sent.text


def limited_key(client: httpx.Client, kb: str) -> str:
    """A key of the client's user that reaches only ``kb`` (made beside it)."""
    client.post("/api/v1/knowledge", json={"name": kb})
    made = client.post("/api/v1/auth/keys", json={"name": f"{kb} only", "knowledge_bases": [kb]})
    assert made.status_code == 201, made.text
    return str(made.json()["key"])
