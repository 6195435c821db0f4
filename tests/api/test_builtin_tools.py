"""Native function calling with Citewell's builtin tools, over real HTTP with the openai SDK.

The LLM is the wire-faithful fake: it makes the tool calls a test plans (``tool_script``),
records every request, and answers once the plan is done. Checked: every tool, the four
cells of seed 000's File Context x Builtin Tools matrix, sources numbered across injected
and found passages, the limits, bad arguments, and that a preset's KBs bound the tools.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from openai import OpenAI

from citewell.config import Settings
from tests.api.conftest import Server, ensure_kb, run_server, upload

pytestmark = pytest.mark.api

QUESTION = [{"role": "user", "content": "What do ducks eat?"}]
PRESETS = [
    {"id": "agentic", "knowledge": ["ducks"], "base_model": "llama3",
     "function_calling": "native"},
    {"id": "traditional", "knowledge": ["ducks"], "base_model": "llama3",
     "function_calling": "native", "builtin_tools": False},
    {"id": "tools-only", "knowledge": ["ducks"], "base_model": "llama3",
     "function_calling": "native", "file_context": False},
    {"id": "no-files", "knowledge": ["ducks"], "base_model": "llama3",
     "function_calling": "native", "file_context": False, "builtin_tools": False},
    {"id": "plain", "knowledge": ["ducks"], "base_model": "llama3"},
    {"id": "legal", "knowledge": ["geese"], "base_model": "llama3", "full_context": True},
    {"id": "picky", "knowledge": ["ducks"], "base_model": "llama3", "mode": "vector",
     "top_k": 2, "relevance_threshold": 0.99},
]  # fmt: skip


@pytest.fixture(scope="module")
def tool_server(tmp_path_factory, onnx_embedder, fake_llm, shared_docs) -> Iterator[Server]:
    settings = Settings.load(
        data_dir=tmp_path_factory.mktemp("tools-data"),
        auth="none",
        llm_base_url=fake_llm.url + "/v1",
        model_presets=json.dumps(PRESETS),
        tool_max_rounds=3,
    )
    with run_server(settings, onnx_embedder) as url:
        server = Server(url, None, fake_llm)
        with server.client() as c:
            ensure_kb(c, "ducks")
            upload(c, "ducks", shared_docs / "wiki_duck.html")
            ensure_kb(c, "geese")
            upload(c, "geese", shared_docs / "fake-memo.pdf")
        yield server


@pytest.fixture
def sdk(tool_server, fake_llm) -> Iterator[OpenAI]:
    fake_llm.requests.clear()
    fake_llm.tool_script = []
    fake_llm.always_call = None
    yield OpenAI(base_url=tool_server.url + "/v1", api_key="unused")
    fake_llm.tool_script = []
    fake_llm.always_call = None


def _answers(fake_llm) -> list[dict]:
    """The requests of the answer (query generation left out)."""
    return [b for _, b in fake_llm.requests if "short search queries" not in str(b["messages"])]


def _offered(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def _tool_results(body: dict) -> list[object]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _ask(sdk: OpenAI, model: str, **extra):
    return sdk.chat.completions.create(
        model=model, messages=QUESTION, extra_body={"retrieval_trace": True, **extra}
    )


def test_query_and_view_tools_add_sources_numbered_after_the_injected(sdk, fake_llm):
    fake_llm.tool_script = [[("query_knowledge_files", {"query": "duck feeding", "count": 3})]]
    reply = _ask(sdk, "agentic")
    sources = reply.model_extra["sources"]
    first, second = _answers(fake_llm)
    injected = first["messages"][0]["content"].count("<source ")
    assert injected > 0 and {"query_knowledge_files", "view_knowledge_file"} <= _offered(first)
    (hits,) = _tool_results(second)
    assert len(hits) == 3 and len(sources) >= injected
    for hit in hits:  # new passages numbered after the injected; a seen one keeps its number
        assert sources[hit["source_id"] - 1]["content"] == hit["content"]
    assert [s["id"] for s in sources] == list(range(1, len(sources) + 1))

    fake_llm.requests.clear()
    file_id = hits[0]["file_id"]
    fake_llm.tool_script = [[("view_knowledge_file", {"file_id": file_id, "max_chars": 300})]]
    reply = _ask(sdk, "agentic")
    (page,) = _tool_results(_answers(fake_llm)[1])
    assert page["truncated"] is True and page["next_offset"] == 300
    cited = reply.model_extra["sources"][page["source_id"] - 1]
    assert cited["content"] == page["content"] and cited["metadata"]["end"] == 300
    calls = reply.model_extra["retrieval_trace"]["tool_calls"]
    assert calls == [
        {"name": "view_knowledge_file", "arguments": json.dumps(
            {"file_id": file_id, "max_chars": 300}), "sources": [page["source_id"]]}
    ]  # fmt: skip


def test_listing_and_finding_tools_stay_within_the_preset(sdk, fake_llm):
    fake_llm.tool_script = [
        [
            ("list_knowledge_bases", {}),
            ("search_knowledge_bases", {"query": "duck"}),
            ("query_knowledge_bases", {"query": "birds"}),
            ("list_knowledge", {}),
            ("search_knowledge_files", {"query": "wiki"}),
        ]
    ]
    _ask(sdk, "agentic")
    listed, searched, ranked, overview, files = _tool_results(_answers(fake_llm)[-1])
    assert [kb["name"] for kb in listed] == ["ducks"]  # 'geese' exists, but not for this preset
    assert [kb["name"] for kb in searched] == ["ducks"]
    assert [kb["name"] for kb in ranked] == ["ducks"] and "similarity" in ranked[0]
    assert [kb["name"] for kb in overview["knowledge_bases"]] == ["ducks"]
    assert [f["filename"] for f in files] == ["wiki_duck.html"]


def test_tools_cannot_reach_past_the_preset_with_any_argument(sdk, fake_llm, tool_server):
    with tool_server.client() as c:
        geese = next(kb for kb in c.get("/api/v1/knowledge").json() if kb["name"] == "geese")
        memo = c.get(f"/api/v1/knowledge/{geese['id']}").json()["files"][0]["id"]
    fake_llm.tool_script = [
        [
            ("query_knowledge_files", {"query": "memo", "knowledge_ids": [geese["id"]]}),
            ("query_knowledge_files", {"query": "memo", "knowledge_ids": ["geese"]}),
            ("view_knowledge_file", {"file_id": memo}),
            ("list_knowledge", {"knowledge_id": geese["id"]}),
            ("search_knowledge_files", {"query": "memo", "knowledge_id": geese["id"]}),
            ("query_knowledge_files", {"query": "memorandum fake memo"}),
        ]
    ]
    reply = _ask(sdk, "agentic")
    *refused, found = _tool_results(_answers(fake_llm)[-1])
    assert all("error" in r for r in refused), refused
    assert all(hit["file_id"] != memo for hit in found)
    assert all(s["metadata"]["file_id"] != memo for s in reply.model_extra["sources"])


def test_bad_arguments_go_back_to_the_model_as_errors(sdk, fake_llm):
    fake_llm.tool_script = [
        [
            ("query_knowledge_files", {"count": 2}),
            ("query_knowledge_files", {"query": "ducks", "count": "many"}),
            ("view_knowledge_file", {"file_id": "no-such-file"}),
            ("query_knowledge_files", {"query": "ducks", "knowledge_ids": "ducks"}),
        ]
    ]
    reply = _ask(sdk, "agentic")
    results = _tool_results(_answers(fake_llm)[-1])
    assert [sorted(r) for r in results] == [["error"]] * 4
    assert "query" in results[0]["error"] and "count" in results[1]["error"]
    assert reply.choices[0].finish_reason == "stop"


@pytest.mark.parametrize(
    ("model", "injected", "tools"),
    [
        ("agentic", True, True),  # full agentic
        ("traditional", True, False),  # traditional RAG
        ("tools-only", False, True),
        ("no-files", False, False),  # no file processing
        ("plain", True, False),  # function_calling defaults to the setting: 'default'
    ],
)
def test_the_file_context_x_builtin_tools_matrix(sdk, fake_llm, model, injected, tools):
    fake_llm.tool_script = [[("query_knowledge_files", {"query": "ducks"})]]  # if offered
    reply = _ask(sdk, model)
    first = _answers(fake_llm)[0]
    system = first["messages"][0]["content"] if first["messages"][0]["role"] == "system" else ""
    assert ("<source " in system) is injected
    assert bool(_offered(first)) is tools
    assert ("query_knowledge_files" in system) is False  # tools are offered, not described
    assert bool(reply.model_extra["sources"]) is (injected or tools)


def test_a_request_can_switch_native_calling_on_or_off(sdk, fake_llm):
    _ask(sdk, "plain", function_calling="native")
    assert _offered(_answers(fake_llm)[0])
    fake_llm.requests.clear()
    _ask(sdk, "agentic", params={"function_calling": "default"})  # Open WebUI's params
    assert not _offered(_answers(fake_llm)[0])


def test_limits_end_the_loop_with_an_answer_that_says_so(sdk, fake_llm):
    fake_llm.always_call = ("query_knowledge_files", {"query": "ducks"})
    reply = _ask(sdk, "agentic")
    answers = _answers(fake_llm)
    assert len(answers) == 4  # tool_max_rounds=3 rounds with tools, then one without
    assert not _offered(answers[-1])
    assert "limit reached: tool rounds (3)" in answers[-1]["messages"][-1]["content"]
    assert reply.choices[0].finish_reason == "stop" and reply.choices[0].message.content


def test_client_tools_come_back_and_builtin_ones_run_here(sdk, fake_llm):
    weather = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
    }
    fake_llm.tool_script = [
        [("query_knowledge_files", {"query": "ducks"})],
        [("get_weather", {})],
    ]
    reply = sdk.chat.completions.create(
        model="agentic", messages=QUESTION, tools=[weather], extra_body={}
    )
    first, second = _answers(fake_llm)
    assert {"get_weather", "query_knowledge_files"} <= _offered(first)
    assert reply.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in reply.choices[0].message.tool_calls] == ["get_weather"]
    assert _tool_results(second)  # the builtin call was answered before the client's came


def test_streams_show_tool_progress_and_found_sources(sdk, fake_llm, tool_server):
    fake_llm.tool_script = [[("query_knowledge_files", {"query": "duck feeding", "count": 2})]]
    with tool_server.client() as c:
        response = c.post(
            "/v1/chat/completions",
            json={"model": "tools-only", "messages": QUESTION, "stream": True},
        )
    chunks = [json.loads(line[6:]) for line in response.text.splitlines() if line[6:7] == "{"]
    events = [c["event"] for c in chunks if "event" in c]
    statuses = [e["data"] for e in events if e["type"] == "status"]
    found = [e["data"] for e in events if e["type"] == "source"]
    assert statuses[0]["description"].startswith("query_knowledge_files(")
    assert statuses[-1]["done"] is True and len(found) == 2
    assert chunks[0]["sources"] == []  # tools-only: nothing injected up front
    assert [s["id"] for s in chunks[-1]["sources"]] == [1, 2]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert "[1]" in text and chunks[-1]["invalid_citations"] == []
    # The openai SDK reads the same stream without tripping on the event chunks.
    fake_llm.tool_script = [[("query_knowledge_files", {"query": "duck feeding"})]]
    stream = sdk.chat.completions.create(model="tools-only", messages=QUESTION, stream=True)
    assert "[1]" in "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def test_presets_carry_their_own_retrieval(sdk):
    whole = _ask(sdk, "legal").model_extra
    assert whole["retrieval_trace"]["mode"] == "full_context"
    (memo,) = whole["sources"]
    assert memo["metadata"]["start"] == 0 and memo["metadata"]["name"] == "fake-memo.pdf"
    picky = _ask(sdk, "picky").model_extra
    assert picky["sources"] == []  # nothing is that close: the threshold is the preset's
    assert len(_ask(sdk, "plain").model_extra["sources"]) > 2
