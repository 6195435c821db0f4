"""Ollama as the LLM (seed 000's first warning): through its native API with num_ctx set to
the context Citewell packs, so retrieved passages are not cut at Ollama's default 2048
tokens. FakeOllamaChat is a wire-faithful fake of Ollama's /api/chat (Ollama cannot run
here); it truncates prompts to num_ctx as Ollama does."""

from __future__ import annotations

import json
import logging

import pytest

from citewell.config import Settings
from citewell.llm.base import ChatMessage
from citewell.llm.ollama import OllamaLLM
from citewell.llm.registry import build_llm
from tests.api.conftest import ensure_kb, run_server
from tests.fake_servers import FakeOllamaChat, serve

pytestmark = pytest.mark.api


@pytest.fixture
def ollama():
    service = FakeOllamaChat()
    with serve(service) as url:
        service.url = url
        yield service


def long_prompt(marker: str, words: int = 5000) -> list[ChatMessage]:
    passage = f"{marker} " + "filler " * words
    return [ChatMessage("system", passage), ChatMessage("user", "What is the code word?")]


def test_num_ctx_keeps_the_front_of_a_long_prompt(ollama):
    ollama.markers = ("PELICAN",)
    llm = OllamaLLM(ollama.url + "/v1", context_window=8192)  # a /v1 suffix is forgiven
    answer = llm.complete("llama3.2:3b", long_prompt("PELICAN"), {"max_tokens": 64, "stop": "##"})
    path, body = ollama.requests[-1]
    assert path == "/api/chat"
    assert body["options"] == {"num_ctx": 8192, "num_predict": 64, "stop": ["##"]}
    assert "PELICAN" in answer.text  # with Ollama's default 2048 it would be cut off
    assert answer.usage.prompt_tokens > 2048
    short = OllamaLLM(ollama.url, context_window=2048)
    assert "PELICAN" not in short.complete("llama3.2:3b", long_prompt("PELICAN"), {}).text


def test_streams_and_tool_calls_in_openai_shape(ollama):
    llm = OllamaLLM(ollama.url, context_window=4096)
    deltas = list(llm.stream("qwen2.5:7b", [ChatMessage("user", "hi")], {}))
    assert "".join(d.text for d in deltas) == "I see  [1]."
    assert deltas[-1].finish_reason == "stop" and deltas[-1].usage is not None
    ollama.tool_call = {"function": {"name": "search", "arguments": {"query": "ducks"}}}
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    done = llm.complete("qwen2.5:7b", [ChatMessage("user", "find")], {"tools": tools})
    assert done.finish_reason == "tool_calls"
    call = done.tool_calls[0]
    assert call["function"] == {"name": "search", "arguments": '{"query": "ducks"}'}
    answer = ChatMessage("tool", "results", tool_call_id=call["id"], name="search")
    turn = [ChatMessage("assistant", "", tool_calls=(call,)), answer]
    llm.complete("qwen2.5:7b", turn, {})
    sent = ollama.requests[-1][1]["messages"]
    assert sent[0]["tool_calls"][0]["function"]["arguments"] == {"query": "ducks"}
    assert sent[1] == {"role": "tool", "content": "results", "tool_name": "search"}
    assert llm.models() == ["llama3.2:3b", "qwen2.5:7b"]


def test_the_server_answers_through_ollama_with_the_packed_context(ollama, tmp_path, onnx_embedder):
    ollama.markers = ("Mallard",)
    settings = Settings.load(
        data_dir=tmp_path,
        auth="none",
        llm_engine="ollama",
        llm_base_url=ollama.url,
        llm_model="llama3.2:3b",
        llm_context_window=6000,
    )
    import httpx

    with run_server(settings, onnx_embedder) as url, httpx.Client(base_url=url, timeout=60) as c:
        ensure_kb(c, "birds")
        text = "The Mallard is a dabbling duck. " + "It lives near ponds and rivers. " * 300
        c.post("/api/v1/knowledge/birds/text", json={"name": "ducks.txt", "content": text})
        assert "qwen2.5:7b" in [m["id"] for m in c.get("/v1/models").json()["data"]]
        body = {
            "model": "llama3.2:3b",
            "knowledge_collections": ["birds"],
            "messages": [{"role": "user", "content": "Which duck dabbles?"}],
            "stream": True,
        }
        with c.stream("POST", "/v1/chat/completions", json=body) as response:
            lines = [line for line in response.iter_lines() if line.startswith("data: {")]
    chunks = [json.loads(line[6:]) for line in lines]
    text = "".join(
        ch["choices"][0]["delta"].get("content") or "" for ch in chunks if ch.get("choices")
    )
    assert "Mallard" in text
    chats = [b for p, b in ollama.requests if p == "/api/chat"]
    assert chats and all(b["options"]["num_ctx"] == 6000 for b in chats)


def test_openai_engine_pointed_at_ollama_warns(tmp_path, caplog):
    settings = Settings.load(data_dir=tmp_path, llm_base_url="http://127.0.0.1:11434/v1")
    with caplog.at_level(logging.WARNING, logger="citewell.llm.registry"):
        build_llm(settings)
    assert "llm_engine=ollama" in caplog.text and "num_ctx" in caplog.text
