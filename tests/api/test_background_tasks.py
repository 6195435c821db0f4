"""Open WebUI's background tasks (title, tags, follow-ups, …: prompts that start with
'### Task:') reach the model as they are, with no retrieval; with no LLM they still get the
JSON they ask for, never retrieved passages."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import ensure_kb, upload

pytestmark = pytest.mark.api

HISTORY = """### Chat History:
<chat_history>
USER: What do ducks eat in winter? See #https://example.com/ducks
ASSISTANT: Seeds and plants [1].
</chat_history>"""
TITLE = (
    "### Task:\nGenerate a concise title summarizing the chat history.\n### Output:\n"
    'JSON format: { "title": "your concise title here" }\n### Examples:\n'
    '- { "title": "Stock Trends" }\n'
)
TAGS = '### Task:\nGenerate 1-3 broad tags.\n### Output:\nJSON format: { "tags": ["tag1"] }\n'
FOLLOW_UPS = (
    '### Task:\nSuggest 3-5 follow-up questions.\n### Output:\nJSON format: { "follow_ups": '
    '["Question 1?", "Question 2?"] }\n'
)


def _ask(client, model: str, prompt: str, **extra):
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], **extra}
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_without_an_llm_tasks_get_the_json_they_ask_for(extractive_server, shared_docs):
    with extractive_server.client() as client:
        ensure_kb(client, "ducks")
        upload(client, "ducks", shared_docs / "wiki_duck.html")
        replies = {
            key: _ask(
                client, "citewell-extractive", prompt + HISTORY, knowledge_collections=["ducks"]
            )
            for key, prompt in (("title", TITLE), ("tags", TAGS), ("follow_ups", FOLLOW_UPS))
        }
    contents = {k: json.loads(r["choices"][0]["message"]["content"]) for k, r in replies.items()}
    assert contents["title"] == {"title": "Ducks Eat Winter"}
    assert contents["tags"] == {"tags": ["General"]}
    assert contents["follow_ups"] == {"follow_ups": []}
    assert all(r["sources"] == [] for r in replies.values())


def test_with_an_llm_tasks_go_through_as_they_are(server, fake_llm, shared_docs):
    with server.client() as client:
        ensure_kb(client, "ducks")
        upload(client, "ducks", shared_docs / "wiki_duck.html")
        before = len(fake_llm.requests)
        reply = _ask(client, "duck-expert", TITLE + HISTORY)  # a preset binding 'ducks'
    assert reply["sources"] == []
    assert len(fake_llm.requests) == before + 1  # no query generation, no fetch, one call
    sent = fake_llm.requests[-1][1]
    assert sent["model"] == "llama3"  # the preset's base model
    assert sent["messages"] == [{"role": "user", "content": TITLE + HISTORY}]


def test_without_an_llm_a_follow_up_is_searched_with_the_turns_before_it(extractive_server):
    with extractive_server.client() as client:
        kb = ensure_kb(client, "trials")
        for name, text in (
            ("aspirin.txt", "Aspirin side effects include stomach bleeding and side pain."),
            ("drugx.txt", "Drug X side effects include nausea."),
            ("ducks.txt", "Ducks eat seeds and small animals near ponds."),
        ):
            added = client.post(
                f"/api/v1/knowledge/{kb['id']}/text", json={"name": name, "content": text}
            )
            assert added.status_code == 201, added.text
        turns = [
            {"role": "user", "content": "What is drug X used for?"},
            {"role": "assistant", "content": "Against tumours [1]."},
            {"role": "user", "content": "What are its side effects?"},
        ]
        replies = [
            client.post(
                "/v1/chat/completions",
                json={
                    "model": "citewell-extractive",
                    "knowledge_collections": [kb["id"]],
                    "retrieval_trace": True,
                    "messages": messages,
                },
            ).json()
            for messages in (turns[-1:], turns)
        ]
    alone, followed = replies
    assert alone["sources"][0]["metadata"]["name"] == "aspirin.txt"  # the words alone
    trace = followed["retrieval_trace"]
    assert "searched together" in trace["query_generation"]
    assert "drug X" in trace["queries"][0] and "side effects" in trace["queries"][0]
    assert followed["sources"][0]["metadata"]["name"] == "drugx.txt"
    assert "nausea" in followed["choices"][0]["message"]["content"]
