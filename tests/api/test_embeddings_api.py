"""OpenAI's embeddings and model endpoints, and usage in streams, through the official openai
SDK on a real server with keys: the vectors are the ones Citewell stores for the same text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from openai import AuthenticationError, BadRequestError, NotFoundError, OpenAI

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.config import Settings
from citewell.ingest.chunk_rows import embed_text
from citewell.types import ChunkFilter
from tests.api.conftest import run_server, stored_vectors

pytestmark = pytest.mark.api
TEXT = "Typewriters were loud machines.\n\nThey were invented in 1868."


@dataclass
class Setup:
    client: OpenAI
    url: str
    stored: dict[str, np.ndarray]  # embedded text → the vector in the chunk store
    kb: str


@pytest.fixture(scope="module")
def setup(tmp_path_factory, onnx_embedder) -> Iterator[Setup]:
    settings = Settings.load(data_dir=tmp_path_factory.mktemp("embeddings"))
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    users = AuthStore(app.catalog.engine)
    key = users.create_key(users.create_user("root", role="admin").id, "tests")[1]
    kb = app.create_kb("machines")
    app.ingest_texts([("machines.md", TEXT)], kb.id)
    (record,) = app.files(kb.id)
    vectors = stored_vectors(app.store)
    stored = {
        embed_text(c.text, c.headings, record.title): vectors[c.id]
        for c in app.store.scan(ChunkFilter(file_ids=(record.id,)))
    }
    with run_server(settings, onnx_embedder, app) as url:
        yield Setup(OpenAI(base_url=url + "/v1", api_key=key), url, stored, kb.id)


def test_vectors_are_the_stored_ones(setup):
    texts = list(setup.stored)
    # Unless told otherwise the SDK asks for base64 and decodes it; then plain floats.
    for options in ({}, {"encoding_format": "float"}):
        answer = setup.client.embeddings.create(model="all-MiniLM-L6-v2", input=texts, **options)
        assert [d.index for d in answer.data] == list(range(len(texts)))
        for text, item in zip(texts, answer.data, strict=True):
            vector = np.array(item.embedding, dtype=np.float32)
            assert vector.shape == (384,)
            assert abs(float(np.linalg.norm(vector)) - 1) < 1e-5
            assert np.allclose(vector, setup.stored[text], atol=1e-5)
        assert answer.usage.prompt_tokens > 0
        assert answer.usage.total_tokens == answer.usage.prompt_tokens


def test_names_token_ids_and_refusals(setup, onnx_embedder):
    one = setup.client.embeddings.create(
        model="sentence-transformers/all-MiniLM-L6-v2", input="Typewriters were loud."
    )
    ids = onnx_embedder.tokenizer.encode("Typewriters were loud.", add_special_tokens=False).ids
    by_ids = setup.client.embeddings.create(model="all-MiniLM-L6-v2", input=ids)
    assert np.allclose(one.data[0].embedding, by_ids.data[0].embedding, atol=1e-5)
    with pytest.raises(NotFoundError):
        setup.client.embeddings.create(model="text-embedding-3-small", input="x")
    with pytest.raises(BadRequestError) as refused:
        setup.client.embeddings.create(model="all-MiniLM-L6-v2", input="x", dimensions=256)
    assert "384" in str(refused.value.body)
    with pytest.raises(BadRequestError):
        setup.client.embeddings.create(model="all-MiniLM-L6-v2", input="   ")
    stranger = OpenAI(base_url=setup.url + "/v1", api_key="cw_" + "x" * 43)
    with pytest.raises(AuthenticationError):
        stranger.embeddings.create(model="all-MiniLM-L6-v2", input="x")


def test_models_can_be_retrieved_one_by_one(setup):
    listed = [m.id for m in setup.client.models.list()]
    assert "citewell-extractive" in listed
    assert setup.client.models.retrieve("citewell-extractive").id == "citewell-extractive"
    with pytest.raises(NotFoundError):
        setup.client.models.retrieve("no-such-model")


def test_usage_is_counted_and_streamed_when_asked(setup):
    messages = [{"role": "user", "content": "When were typewriters invented?"}]
    extra = {"knowledge_collections": [setup.kb]}
    answer = setup.client.chat.completions.create(
        model="citewell-extractive", messages=messages, extra_body=extra
    )
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    chunks = list(
        setup.client.chat.completions.create(
            model="citewell-extractive",
            messages=messages,
            extra_body=extra,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens > 0
    content = [c for c in chunks[:-1] if "event" not in (c.model_extra or {})]
    assert all(c.choices for c in content)  # only source events and usage have none
    text = "".join(c.choices[0].delta.content or "" for c in content)
    assert "1868" in text
