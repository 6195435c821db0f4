"""The recipes of docs/clients.md, run with the real LangChain and LlamaIndex clients.

LangChain keeps only the fields it knows of a reply, so Citewell's sources reach it through
the ``X-Citewell-Sources`` header (``include_response_headers=True``); LlamaIndex keeps the
whole reply in ``raw``. The LLM behind Citewell is the wire-faithful fake.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.api

QUESTION = "What do ducks eat?"
EXTRA = {"knowledge_collections": ["ducks"]}


@pytest.fixture(scope="module")
def base_url(server, ducks_sdk):
    return server.url + "/v1"


def _langchain(base_url: str, **kwargs):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model="fake-llm",
        base_url=base_url,
        api_key="unused",
        include_response_headers=True,
        extra_body=EXTRA,
        **kwargs,
    )


def test_langchain_reaches_sources_through_the_header(base_url, ducks_sdk):
    reply = _langchain(base_url).invoke(QUESTION)
    sources = json.loads(reply.response_metadata["headers"]["x-citewell-sources"])
    body = ducks_sdk.chat.completions.create(
        model="fake-llm", messages=[{"role": "user", "content": QUESTION}], extra_body=EXTRA
    ).model_extra["sources"]
    assert "[1]" in reply.content
    assert [s["id"] for s in sources] == [s["id"] for s in body]
    first = sources[0]
    assert first["name"] == "wiki_duck.html" and first["file_id"] == body[0]["file"]["id"]
    assert body[0]["content"].startswith(first["content"].rstrip("…"))


def test_langchain_stream_and_tools(base_url):
    chunks = list(_langchain(base_url).stream(QUESTION))
    header = chunks[0].response_metadata["headers"]["x-citewell-sources"]
    assert json.loads(header)[0]["id"] == 1
    assert "[1]" in "".join(str(c.content) for c in chunks)

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "rain"

    called = _langchain(base_url).bind_tools([get_weather]).invoke(QUESTION)
    assert called.tool_calls and called.tool_calls[0]["name"] == "get_weather"


def test_langchain_embeddings_match_the_openai_sdk(base_url, ducks_sdk):
    from langchain_openai import OpenAIEmbeddings

    # check_embedding_ctx_length=False: its default counts tokens with tiktoken, whose
    # encodings are downloaded on first use (impossible offline).
    embedder = OpenAIEmbeddings(
        model="all-MiniLM-L6-v2",
        base_url=base_url,
        api_key="unused",
        check_embedding_ctx_length=False,
    )
    mine = np.array(embedder.embed_query("ducks eat plants"))
    sdk = ducks_sdk.embeddings.create(model="all-MiniLM-L6-v2", input="ducks eat plants")
    assert mine.shape == (384,)
    np.testing.assert_allclose(mine, sdk.data[0].embedding, atol=1e-5)


def _llama_index(base_url: str):
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model="fake-llm",
        api_base=base_url,
        api_key="unused",
        is_chat_model=True,
        additional_kwargs={"extra_body": EXTRA},
    )


def test_llama_index_keeps_sources_in_raw(base_url):
    from llama_index.core.llms import ChatMessage

    messages = [ChatMessage(role="user", content=QUESTION)]
    reply = _llama_index(base_url).chat(messages)
    sources = reply.raw.model_extra["sources"]
    assert "[1]" in reply.message.content and sources[0]["id"] == 1
    assert sources[0]["metadata"]["name"] == "wiki_duck.html"

    streamed = list(_llama_index(base_url).stream_chat(messages))
    extras = [r.raw.model_extra or {} for r in streamed]
    with_sources = [e["sources"] for e in extras if "sources" in e]
    assert with_sources and with_sources[0][0]["id"] == 1
    assert "[1]" in streamed[-1].message.content
