"""The chat pipeline over HTTP, against a wire-faithful fake LLM that records its requests."""

import json

import pytest

from tests.api.conftest import assert_citations_resolve, ensure_kb, upload

pytestmark = pytest.mark.api


@pytest.fixture(scope="module")
def ducks(server, shared_docs):
    with server.client() as c:
        ensure_kb(c, "ducks")
        upload(c, "ducks", shared_docs / "wiki_duck.html")
    return "ducks"


def chat(client, path="/api/v1/rag/chat/completions", **body):
    body.setdefault("model", "fake-llm")
    body.setdefault("messages", [{"role": "user", "content": "What do ducks eat?"}])
    return client.post(path, json=body)


def last_llm_request(server):
    return [b for p, b in server.llm.requests if p == "/v1/chat/completions"][-1]


def test_rag_chat_injects_context_into_the_system_message(server, ducks):
    with server.client() as c:
        response = chat(c, knowledge_collections=[ducks])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == "Ducks eat plants and small animals [1]."
    assert_citations_resolve(body)
    source = body["sources"][0]
    assert source["id"] == 1 and source["index"] == 0
    assert source["metadata"]["file_id"] == source["file"]["id"]
    assert source["file"] == {"id": source["file"]["id"], "name": "wiki_duck.html", "type": "html"}
    sent = last_llm_request(server)["messages"]
    assert sent[0]["role"] == "system"
    assert '<source id="1" name="wiki_duck.html">' in sent[0]["content"]
    assert "What do ducks eat?" in sent[0]["content"]  # the template's {{QUERY}}
    assert sent[-1] == {"role": "user", "content": "What do ducks eat?"}


def test_invalid_citations_are_removed(server, ducks):
    server.llm.reply = "Ducks eat grass [1] and fish [42]."
    try:
        with server.client() as c:
            body = chat(c, knowledge_collections=[ducks]).json()
    finally:
        server.llm.reply = "Ducks eat plants and small animals [1]."
    assert body["choices"][0]["message"]["content"] == "Ducks eat grass [1] and fish."
    assert body["invalid_citations_removed"] == [42]
    assert_citations_resolve(body)


def test_query_generation_uses_history_and_falls_back(server, ducks):
    history = [
        {"role": "user", "content": "Tell me about ducks."},
        {"role": "assistant", "content": "Ducks are waterfowl."},
        {"role": "user", "content": "What do they eat?"},
    ]
    with server.client() as c:
        body = chat(c, knowledge_collections=[ducks], messages=history, retrieval_trace=True).json()
        assert body["retrieval_trace"]["queries"] == ["duck diet"]
        prompts = [b for p, b in server.llm.requests if p == "/v1/chat/completions"]
        assert "USER: What do they eat?" in prompts[-2]["messages"][0]["content"]
        server.llm.queries_reply = "Sure! Here are some queries: duck food"  # not JSON
        try:
            body = chat(
                c, knowledge_collections=[ducks], messages=history, retrieval_trace=True
            ).json()
        finally:
            server.llm.queries_reply = '{"queries": ["duck diet"]}'
        assert body["retrieval_trace"]["queries"] == ["What do they eat?"]
        assert body["retrieval_trace"]["query_generation"] == "unusable reply"


def test_single_turn_skips_query_generation(server, ducks):
    server.llm.requests.clear()
    with server.client() as c:
        body = chat(c, knowledge_collections=[ducks], retrieval_trace=True).json()
    assert body["retrieval_trace"]["query_generation"] == "skipped"
    assert len([p for p, _ in server.llm.requests if p == "/v1/chat/completions"]) == 1


def test_streaming_follows_openai_sse_and_carries_sources(server, ducks):
    with (
        server.client() as c,
        c.stream(
            "POST",
            "/api/v1/rag/chat/completions",
            json={
                "model": "fake-llm",
                "stream": True,
                "knowledge_collections": [ducks],
                "messages": [{"role": "user", "content": "What do ducks eat?"}],
            },
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["sources"] and chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(ch["choices"][0]["delta"].get("content", "") for ch in chunks if ch["choices"])
    assert text == "Ducks eat plants and small animals [1]."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["invalid_citations"] == []

    # Open WebUI's source events, one per source in [n] order, before the text: it saves them
    # on the message (citation chips) and numbers them by distinct metadata[].source.
    # Status events (what was searched, how many sources) come first, as Open WebUI shows them.
    sources = chunks[0]["sources"]
    events = [ch["event"] for ch in chunks if "event" in ch]
    statuses = [e["data"] for e in events if e["type"] == "status"]
    assert statuses[0]["action"] == "queries_generated" and statuses[0]["queries"]
    assert statuses[1] == {"action": "sources_retrieved", "count": len(sources), "done": True}
    events = events[len(statuses) :]
    assert [e["type"] for e in events] == ["source"] * len(sources)
    assert all(ch["choices"] == [] for ch in chunks if "event" in ch)
    for source, event in zip(sources, events, strict=True):
        data = event["data"]
        assert set(data) == {"source", "document", "metadata", "distances"}
        assert data["source"] == {"id": source["file"]["id"], "name": source["file"]["name"]}
        assert data["document"] == [source["content"]]
        assert data["metadata"][0]["citewell_id"] == source["id"]
        assert data["metadata"][0]["name"] == source["metadata"]["name"]
    assert len({e["data"]["metadata"][0]["source"] for e in events}) == len(events)


def test_unknown_model_is_404_and_bad_params_400(server, ducks):
    with server.client() as c:
        missing = chat(c, model="no-such-model", knowledge_collections=[ducks])
        assert missing.status_code == 404 and missing.json()["code"] == "model_not_found"
        bad = chat(c, temperature=7)
        assert bad.status_code == 400 and "temperature" in bad.json()["detail"]
        empty = chat(c, messages=[])
        assert empty.status_code == 400


def test_unknown_collections_and_files_are_warnings(server, ducks):
    with server.client() as c:
        body = chat(c, knowledge_collections=[ducks, "nope"], file_ids=["file-1"]).json()
    assert body["warnings"] == ["knowledge collection 'nope' not found", "file 'file-1' not found"]
    assert body["sources"]


def test_file_ids_scope_retrieval_to_those_files(server, ducks, shared_docs):
    with server.client() as c:
        other = upload(c, ducks, shared_docs / "codeblock.md")["file"]["id"]
        body = chat(c, file_ids=[other]).json()
    assert body["sources"] and {s["file"]["id"] for s in body["sources"]} == {other}


def test_model_preset_binds_knowledge_and_base_model(server, ducks):
    with server.client() as c:
        models = [m["id"] for m in c.get("/v1/models").json()["data"]]
        assert "duck-expert" in models and "fake-llm" in models
        body = chat(c, path="/v1/chat/completions", model="duck-expert").json()
    assert body["model"] == "duck-expert" and body["sources"]
    sent = last_llm_request(server)
    assert sent["model"] == "llama3"
    assert sent["messages"][0]["content"].startswith("Be brief.")


def test_rag_listing_endpoints(server, ducks):
    with server.client() as c:
        models = c.get("/api/v1/rag/models").json()["data"]
        collections = c.get("/api/v1/rag/knowledge/collections").json()["collections"]
        files = c.get("/api/v1/rag/files").json()["files"]
    assert {"id", "object", "created", "owned_by"} <= set(models[0])
    assert {"id", "name", "description", "created_at", "updated_at"} <= set(collections[0])
    assert any(f["name"] == "wiki_duck.html" and f["type"] == "html" for f in files)
    assert {"id", "name", "type", "created_at", "updated_at"} <= set(files[0])


def test_upstream_failure_is_a_clear_502(server, ducks):
    server.llm.fail_next = [500, 500, 500]
    with server.client() as c:
        response = chat(c, knowledge_collections=[ducks])
    server.llm.fail_next = []
    assert response.status_code == 502 and response.json()["code"] == "llm_failed"


def test_extractive_answer_without_llm(extractive_server, shared_docs):
    with extractive_server.client() as c:
        ensure_kb(c, "ducks")
        upload(c, "ducks", shared_docs / "wiki_duck.html")
        unknown = chat(c, model="gpt-3.5-turbo", knowledge_collections=["ducks"])
        body = chat(c, model="citewell-extractive", knowledge_collections=["ducks"]).json()
        listed = [m["id"] for m in c.get("/api/v1/rag/models").json()["data"]]
    # Without an LLM only what /models lists answers (seed 004: unknown model is 404).
    assert unknown.status_code == 404 and unknown.json()["code"] == "model_not_found"
    assert "use one of: citewell-extractive" in unknown.json()["detail"]
    assert listed == ["citewell-extractive"]
    answer = body["choices"][0]["message"]["content"]
    assert body["extractive"] is True and answer.startswith("Extractive answer")
    assert "[1]" in answer or "[2]" in answer
    assert_citations_resolve(body)
