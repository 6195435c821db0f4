"""The official openai SDK as the client, unchanged: base_url and any api_key."""

import pytest
from openai import NotFoundError

pytestmark = pytest.mark.api


@pytest.fixture(scope="module")
def client(ducks_sdk):
    return ducks_sdk


def test_models(client):
    ids = [m.id for m in client.models.list()]
    assert "duck-expert" in ids and "fake-llm" in ids


def test_chat_with_preset(client):
    completion = client.chat.completions.create(
        model="duck-expert", messages=[{"role": "user", "content": "What do ducks eat?"}]
    )
    assert completion.choices[0].message.content.endswith("[1].")
    sources = completion.model_extra["sources"]
    assert sources[0]["id"] == 1 and sources[0]["file"]["name"] == "wiki_duck.html"


def test_chat_with_knowledge_in_extra_body(client):
    completion = client.chat.completions.create(
        model="fake-llm",
        messages=[{"role": "user", "content": "What do ducks eat?"}],
        extra_body={"knowledge_collections": ["ducks"]},
    )
    assert completion.model_extra["sources"]
    assert completion.usage.total_tokens > 0


def test_streaming(client):
    stream = client.chat.completions.create(
        model="duck-expert",
        stream=True,
        messages=[{"role": "user", "content": "What do ducks eat?"}],
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Ducks eat plants and small animals [1]."
    assert chunks[0].model_extra["sources"]
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_unknown_model(client):
    with pytest.raises(NotFoundError):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
