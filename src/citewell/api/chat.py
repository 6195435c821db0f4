"""Chat completions in OpenAI's wire format, with sources, shared by /v1 and /api/v1/rag.

Sources: every response carries ``sources`` (the seed's shape, one entry per chunk given to
the model).
``[n]`` in the answer refers to the source whose ``id`` is n (``index`` is n - 1). Streaming:
the first chunk carries ``sources`` (and ``extractive`` when no LLM wrote the answer); the
last carries ``sources`` again, ``invalid_citations`` (numbers the model cited that match
no source) and ``attribution``: each sentence checked against the sources, with
``content``, the answer as it reads with its citations set right (or withheld). A
non-streamed answer is given back checked, with ``attribution`` and, if it was withheld,
``abstained``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from itertools import chain
from typing import Any

from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from citewell.answer.agent import StreamEvent
from citewell.answer.attribution import ABSTENTION
from citewell.answer.citations import remove_invalid
from citewell.answer.context import CitedSource, source_public
from citewell.answer.exchange import ChatRequest, ChatResult, PreparedChat
from citewell.answer.queries import is_tool_round
from citewell.api.openai_schemas import ChatCompletionCreate
from citewell.auth.access import Access
from citewell.errors import CitewellError, InvalidInput
from citewell.llm.base import CHAT_OPTIONS, ChatMessage, Delta, Usage
from citewell.services.answers import AnswerService

SOURCES_HEADER = "X-Citewell-Sources"
# Clients read a response's whole header block into 16 KiB (h11's default): stay well under.
SOURCES_HEADER_BUDGET = 8 * 1024
HEADER_QUOTE_CHARS = (300, 80, 0)  # quote lengths tried in turn until the sources fit


def to_request(body: ChatCompletionCreate, access: Access) -> ChatRequest:
    options = body.model_dump(include=set(CHAT_OPTIONS), exclude_none=True)
    messages = tuple(
        ChatMessage(m.role, m.text(), tuple(m.tool_calls or ()), m.tool_call_id or "", m.name or "")
        for m in body.messages
    )
    return ChatRequest(
        model=body.model,
        messages=messages,
        knowledge=tuple(body.knowledge_collections),
        file_ids=tuple(body.file_ids),
        options=options,
        stream=body.stream,
        trace=body.retrieval_trace,
        web_search=body.wants_web_search(),
        function_calling=body.wanted_function_calling(),
        access=access,
    )


def sources_header(sources: list[CitedSource]) -> dict[str, str]:
    """The sources as a response header: compact JSON in ASCII, for clients that keep headers
    but drop unknown body fields (LangChain's ``include_response_headers``). Quotes are cut,
    then left out, then trailing sources, to stay under SOURCES_HEADER_BUDGET; the body has all."""
    items: list[dict[str, Any]] = []
    for limit in HEADER_QUOTE_CHARS:
        items = [_compact(s, limit) for s in sources]
        if len(_compact_json(items)) <= SOURCES_HEADER_BUDGET:
            return {SOURCES_HEADER: _compact_json(items)}
    while items and len(_compact_json(items)) > SOURCES_HEADER_BUDGET:
        items.pop()  # without quotes still too long: the last sources are left out
    return {SOURCES_HEADER: _compact_json(items)}


def _compact_json(items: list[dict[str, Any]]) -> str:
    return json.dumps(items, ensure_ascii=True, separators=(",", ":"))


def _compact(source: CitedSource, quote_chars: int) -> dict[str, Any]:
    quote = source.text[:quote_chars] + ("…" if len(source.text) > quote_chars else "")
    item = {
        "id": source.number,
        "file_id": source.file_id,
        "name": source.file_name,
        "page": source.page,
        "start": source.start,
        "end": source.end,
        "score": round(source.score, 4),
        "knowledge_base_id": source.kb_id,
    }
    if source.url:
        item["url"] = source.url
    if quote_chars:
        item["content"] = quote
    return item


def _extras(prepared: PreparedChat) -> dict[str, Any]:
    extras: dict[str, Any] = {"sources": [source_public(s) for s in prepared.sources]}
    if prepared.warnings:
        extras["warnings"] = prepared.warnings
    if prepared.request.trace:
        extras["retrieval_trace"] = {"queries": prepared.queries, **prepared.trace}
    return extras


def completion_body(result: ChatResult, completion_id: str) -> dict[str, Any]:
    prepared = result.prepared
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": prepared.request.model,
        "choices": [
            {
                "index": 0,
                "message": _message(result),
                "finish_reason": result.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": result.usage.prompt_tokens,
            "completion_tokens": result.usage.completion_tokens,
            "total_tokens": result.usage.total_tokens,
        },
        **_extras(prepared),
    }
    if result.invalid_citations:
        body["invalid_citations_removed"] = list(result.invalid_citations)
    if result.extractive:
        body["extractive"] = True
    if result.attribution is not None:
        body["attribution"] = result.attribution.public()
    if result.abstained:
        body["abstained"] = {"reason": result.abstained}
        if result.withheld:
            body["abstained"]["withheld"] = result.withheld
    return body


def source_event(source: CitedSource) -> dict[str, Any]:
    """A source as Open WebUI reads it from an upstream stream. It numbers [n] by distinct
    ``metadata[].source``, so each chunk gets its own there: its numbers stay Citewell's."""
    about: dict[str, Any] = {"id": source.file_id, "name": source.file_name}
    if source.url:
        about["url"] = source.url
    metadata = {
        "source": f"{source.file_id}#{source.chunk_id or source.number}",
        "name": source.file_name,
        "file_id": source.file_id,
        "start": source.start,
        "end": source.end,
        "citewell_id": source.number,
    }
    if source.page is not None:
        metadata["page"] = source.page
    return {
        "source": about,
        "document": [source.text],
        "metadata": [metadata],
        "distances": [round(source.score, 6)],
    }


def _event(completion_id: str, model: str, event: dict[str, Any]) -> str:
    """A chunk with no choices (clients that do not know ``event`` skip it) and the event."""
    return _no_choices(completion_id, model, event=event)


def _no_choices(completion_id: str, model: str, **extra: Any) -> str:
    payload = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [],
        **extra,
    }
    return f"data: {json.dumps(payload)}\n\n"


def _message(result: ChatResult) -> dict[str, Any]:
    if not result.tool_calls:
        return {"role": "assistant", "content": result.text}
    calls = list(result.tool_calls)
    return {"role": "assistant", "content": result.text or None, "tool_calls": calls}


def _chunk(
    completion_id: str, model: str, delta: dict[str, Any], finish: str | None, **extra: Any
) -> str:
    payload = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return f"data: {json.dumps(payload)}\n\n"


def sse_events(
    answers: AnswerService,
    prepared: PreparedChat,
    deltas: Iterator[Delta | StreamEvent],
    completion_id: str,
    include_usage: bool = False,
) -> Iterator[str]:
    """OpenAI's chunks; with ``include_usage`` (stream_options), a last chunk with no choices
    and the usage, as OpenAI sends it."""
    chat, model = answers.chat, prepared.request.model
    extras = _extras(prepared)
    if chat.llm is None:  # as the whole response says it: quoted sentences, no LLM
        extras["extractive"] = True
    yield _chunk(completion_id, model, {"role": "assistant", "content": ""}, None, **extras)
    # Open WebUI saves these on the message (its citation chips). A tool round searched the
    # same and its message already has them: sent again, they would be saved twice.
    if not is_tool_round(prepared.request.messages):
        for status in _progress(prepared):
            yield _event(completion_id, model, {"type": "status", "data": status})
        for source in prepared.sources:
            yield _event(completion_id, model, {"type": "source", "data": source_event(source)})
    text, finish, usage = [], "stop", None
    try:
        for delta in deltas:
            if isinstance(delta, StreamEvent):  # the builtin tools at work
                yield _event(completion_id, model, _stream_event(delta))
                continue
            if delta.text:
                text.append(delta.text)
                yield _chunk(completion_id, model, {"content": delta.text}, None)
            if delta.tool_calls:
                yield _chunk(completion_id, model, {"tool_calls": list(delta.tool_calls)}, None)
            finish = delta.finish_reason or finish
            usage = delta.usage or usage
    except CitewellError as exc:
        yield f"data: {json.dumps({'error': {'message': exc.message, 'code': exc.code}})}\n\n"
        return
    written = "".join(text)
    invalid = chat.invalid_citations(written, prepared)
    counted = _usage(usage or chat.usage(prepared, written))
    extras = _extras(prepared)  # again: tools may have found more sources meanwhile
    last: dict[str, Any] = {**extras, "invalid_citations": invalid, "usage": counted}
    attribution = _attributed(answers, prepared, written)
    if attribution is not None:
        last["attribution"] = attribution
    yield _chunk(completion_id, model, {}, finish, **last)
    if include_usage:
        yield _no_choices(completion_id, model, usage=counted)
    yield "data: [DONE]\n\n"


def _attributed(
    answers: AnswerService, prepared: PreparedChat, written: str
) -> dict[str, Any] | None:
    """The streamed answer's attribution, with ``content``: the whole answer as it reads
    with its citations set right (what was streamed cannot be taken back)."""
    if prepared.abstained:  # answered without the model: what was streamed is all
        return {"sentences": [], "content": written, "abstained": prepared.abstained}
    text, _ = remove_invalid(written, [s.number for s in prepared.sources])
    attribution = answers.attribute(prepared, text)
    if attribution is None:
        return None
    abstained = answers.chat.abstention(attribution)
    if abstained:
        return {**attribution.public(), "content": ABSTENTION, "abstained": abstained}
    return {**attribution.public(), "content": attribution.text}


def _progress(prepared: PreparedChat) -> list[dict[str, Any]]:
    """What retrieval did before the answer, as Open WebUI's status events show it."""
    if not prepared.used_rag:
        return []
    return [
        {"action": "queries_generated", "queries": prepared.queries, "done": False},
        {"action": "sources_retrieved", "count": len(prepared.sources), "done": True},
    ]


def _stream_event(event: StreamEvent) -> dict[str, Any]:
    if event.type == "source":
        return {"type": "source", "data": source_event(event.data["source"])}
    return {"type": event.type, "data": event.data}


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


async def handle_chat(answers: AnswerService, body: ChatCompletionCreate) -> Any:
    problem = body.unsupported(not answers.extractive)
    if problem is not None:
        raise InvalidInput(problem)
    await run_in_threadpool(answers.check_model, body.model)
    chat_request = to_request(body, answers.access)
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    if not body.stream:
        result = await run_in_threadpool(answers.complete, chat_request)
        headers = sources_header(result.prepared.sources)
        return JSONResponse(completion_body(result, completion_id), headers=headers)
    prepared, deltas = await run_in_threadpool(answers.stream, chat_request)
    # Start the upstream stream now, so a failure before the first token is a proper error.
    first = await run_in_threadpool(next, deltas, None)
    primed = chain([first] if first is not None else [], deltas)
    return StreamingResponse(
        sse_events(answers, prepared, primed, completion_id, body.wants_usage()),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", **sources_header(prepared.sources)},
    )
