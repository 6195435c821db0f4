"""A ducks_sdk's own tools through Citewell, with the official openai SDK: tool calls come back
plain and streamed, a tool result completes the round trip, and RAG context and tools reach
the LLM together. The LLM is the wire-faithful fake (it calls the first tool it is given)."""

from __future__ import annotations

import json

import pytest
from openai import BadRequestError, OpenAI

pytestmark = pytest.mark.api

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}
QUESTION = [{"role": "user", "content": "What do ducks eat when it rains?"}]


def test_tool_calls_come_back_and_a_tool_result_completes_the_turn(ducks_sdk, fake_llm):
    first = ducks_sdk.chat.completions.create(
        model="fake-llm",
        messages=QUESTION,
        tools=[WEATHER],
        tool_choice="auto",
        extra_body={"knowledge_collections": ["ducks"]},
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert (
        call.function.name == "get_weather"
        and "ducks" in json.loads(call.function.arguments)["query"]
    )
    sent = fake_llm.requests[-1][1]
    assert sent["tools"] == [WEATHER] and sent["tool_choice"] == "auto"
    assert "<source" in sent["messages"][0]["content"]  # RAG context and tools together
    assert first.model_extra["sources"]

    messages = [
        *QUESTION,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "Rain, 12 degrees."},
    ]
    final = ducks_sdk.chat.completions.create(
        model="fake-llm",
        messages=messages,
        tools=[WEATHER],
        extra_body={"knowledge_collections": ["ducks"]},
    )
    assert final.choices[0].finish_reason == "stop"
    assert final.choices[0].message.content and not final.choices[0].message.tool_calls
    upstream = fake_llm.requests[-1][1]["messages"]
    assert upstream[-1] == {"role": "tool", "content": "Rain, 12 degrees.", "tool_call_id": call.id}
    assert upstream[-2]["tool_calls"][0]["id"] == call.id


def test_tool_calls_stream_in_openai_delta_format(ducks_sdk):
    stream = ducks_sdk.chat.completions.create(
        model="fake-llm", messages=QUESTION, tools=[WEATHER], stream=True
    )
    name, arguments, finish = "", "", None
    for chunk in stream:
        for choice in chunk.choices:
            for piece in choice.delta.tool_calls or []:
                name += piece.function.name or ""
                arguments += piece.function.arguments or ""
            finish = choice.finish_reason or finish
    assert name == "get_weather" and json.loads(arguments)["query"]
    assert finish == "tool_calls"


def test_what_cannot_be_honoured_is_a_400_that_names_it(ducks_sdk, extractive_server):
    extractive = OpenAI(base_url=extractive_server.url + "/v1", api_key="unused")
    cases = [
        (extractive, {"tools": [WEATHER]}, "tools"),
        (extractive, {"response_format": {"type": "json_object"}}, "response_format"),
        (ducks_sdk, {"n": 2}, "n > 1"),
        (ducks_sdk, {"logprobs": True}, "logprobs"),
    ]
    for target, options, named in cases:
        with pytest.raises(BadRequestError) as refused:
            target.chat.completions.create(model="fake-llm", messages=QUESTION, **options)
        assert named in str(refused.value.body), refused.value.body


def test_a_tool_round_searches_as_the_first_and_sends_no_source_events_again(
    server, ducks_sdk, fake_llm
):
    """Open WebUI saves every source event on the message: the round that carries the tool
    results must cite the same sources by the same numbers, and not send them twice."""
    first = ducks_sdk.chat.completions.create(
        model="duck-expert", messages=QUESTION, tools=[WEATHER]
    )
    call = first.choices[0].message.tool_calls[0]
    fake_llm.queries_reply = '{"queries": ["something else entirely"]}'
    messages = [
        *QUESTION,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "Rain, 12 degrees."},
    ]
    try:
        with server.client() as c:
            response = c.post(
                "/v1/chat/completions",
                json={"model": "duck-expert", "messages": messages, "stream": True},
            )
    finally:
        fake_llm.queries_reply = '{"queries": ["duck diet"]}'
    chunks = [json.loads(line[6:]) for line in response.text.splitlines() if line[6:7] == "{"]
    assert not any("event" in chunk for chunk in chunks)
    assert chunks[0]["sources"] == first.model_extra["sources"]
