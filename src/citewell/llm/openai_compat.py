"""Any OpenAI-compatible chat endpoint: OpenAI, Ollama, vLLM, llama.cpp server, LM Studio."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from citewell.errors import LLMError
from citewell.llm.base import CHAT_OPTIONS, ChatMessage, Completion, Delta, Usage
from citewell.llm.remote import RemoteLLM


class OpenAICompatibleLLM(RemoteLLM):
    def model_names(self, listing: Any) -> list[str]:
        return [m["id"] for m in listing.get("data", [])]

    def _body(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "stream": stream,
            "messages": [m.wire() for m in messages],
        }
        body.update({k: v for k, v in options.items() if k in CHAT_OPTIONS and v is not None})
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def complete(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Completion:
        response = self._post(self._body(model, messages, options, stream=False))
        try:
            data = response.json()
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            return Completion(
                text=choice["message"].get("content") or "",
                finish_reason=choice.get("finish_reason") or "stop",
                usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
                tool_calls=tuple(choice["message"].get("tool_calls") or ()),
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise LLMError(
                f"Unexpected answer from the LLM at {self.base_url}: {response.text[:300]}"
            ) from exc

    def stream(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Iterator[Delta]:
        body = self._body(model, messages, options, stream=True)
        for line in self._lines(body):
            delta = parse_sse_line(line)
            if delta is not None:
                yield delta


def parse_sse_line(line: str) -> Delta | None:
    """One OpenAI SSE line → a Delta (None for keep-alives, comments and [DONE])."""
    if not line.startswith("data:"):
        return None
    payload = line[5:].strip()
    if not payload or payload == "[DONE]":
        return None
    try:
        data = json.loads(payload)
    except ValueError as exc:
        raise LLMError(f"Unreadable stream event from the LLM: {payload[:200]}") from exc
    usage = data.get("usage")
    choices = data.get("choices") or [{}]
    choice = choices[0]
    delta = choice.get("delta") or {}
    return Delta(
        text=delta.get("content") or "",
        tool_calls=tuple(delta.get("tool_calls") or ()),
        finish_reason=choice.get("finish_reason"),
        usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
        if usage
        else None,
    )
