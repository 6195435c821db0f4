"""Ollama through its native /api/chat, so each request can say how much context it needs.

Ollama's OpenAI-compatible endpoint cannot set the context length per request, and its
default (2048 tokens on many installs) silently cuts the front of a long RAG prompt: the
retrieved passages. Here every request sends ``options.num_ctx`` = llm_context_window, the
size Citewell packs the prompt to, so what was packed is what the model reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from citewell.errors import LLMError
from citewell.llm.base import ChatMessage, Completion, Delta, Usage
from citewell.llm.remote import RemoteLLM

# OpenAI's option names → Ollama's (in "options"); seed, stop and the penalties keep theirs.
OPTION_NAMES = {
    "max_tokens": "num_predict",
    "temperature": "temperature",
    "top_p": "top_p",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "stop": "stop",
    "seed": "seed",
}


class OllamaLLM(RemoteLLM):
    chat_path = "/api/chat"
    models_path = "/api/tags"
    unreachable_hint = (
        "check llm_base_url (Ollama's root, e.g. http://127.0.0.1:11434) and that "
        "`ollama serve` runs."
    )
    missing_model_hint = "Ollama does not have that model; `ollama pull` it"

    def __init__(
        self, base_url: str, context_window: int, timeout: float = 120.0, retries: int = 2
    ) -> None:
        root = base_url.rstrip("/").removesuffix("/v1").removesuffix("/api")
        super().__init__(root, timeout=timeout, retries=retries)
        self.context_window = context_window

    def model_names(self, listing: Any) -> list[str]:
        return [m["name"] for m in listing.get("models", [])]

    def _body(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        settings: dict[str, Any] = {"num_ctx": self.context_window}
        for name, value in options.items():
            if name in OPTION_NAMES and value is not None:
                settings[OPTION_NAMES[name]] = (
                    [value] if name == "stop" and isinstance(value, str) else value
                )
        body: dict[str, Any] = {
            "model": model,
            "stream": stream,
            "messages": [_message(m) for m in messages],
            "options": settings,
        }
        if options.get("tools"):
            body["tools"] = options["tools"]
        if (options.get("response_format") or {}).get("type") == "json_object":
            body["format"] = "json"
        return body

    def complete(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Completion:
        response = self._post(self._body(model, messages, options, stream=False))
        try:
            data = response.json()
            message = data["message"]
            return Completion(
                text=message.get("content") or "",
                finish_reason=_finish(data, message),
                usage=Usage(data.get("prompt_eval_count", 0), data.get("eval_count", 0)),
                tool_calls=_tool_calls(message),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LLMError(
                f"Unexpected answer from Ollama at {self.base_url}: {response.text[:300]}"
            ) from exc

    def stream(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Iterator[Delta]:
        body = self._body(model, messages, options, stream=True)
        for line in self._lines(body):
            if line.strip():
                yield _delta(line)


def _message(message: ChatMessage) -> dict[str, Any]:
    """OpenAI's message shape → Ollama's (tool call arguments are objects there)."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content or ""}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"function": {"name": c["function"]["name"], "arguments": _arguments(c)}}
            for c in message.tool_calls
        ]
    if message.role == "tool" and message.name:
        wire["tool_name"] = message.name
    return wire


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    raw = call.get("function", {}).get("arguments") or "{}"
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _tool_calls(message: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """Ollama's tool calls in OpenAI's shape (ids made up: Ollama gives none)."""
    return tuple(
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": call["function"]["name"],
                "arguments": json.dumps(call["function"].get("arguments") or {}),
            },
        }
        for i, call in enumerate(message.get("tool_calls") or ())
    )


def _finish(data: dict[str, Any], message: dict[str, Any]) -> str:
    if message.get("tool_calls"):
        return "tool_calls"
    return "length" if data.get("done_reason") == "length" else "stop"


def _delta(line: str) -> Delta:
    """One NDJSON line of a streamed /api/chat answer."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise LLMError(f"Unreadable stream line from Ollama: {line[:200]}") from exc
    if "error" in data:
        raise LLMError(f"Ollama failed mid-stream: {data['error']}")
    message = data.get("message") or {}
    done = bool(data.get("done"))
    calls = tuple({**c, "index": i} for i, c in enumerate(_tool_calls(message)))
    return Delta(
        text=message.get("content") or "",
        tool_calls=calls,  # whole calls in one line, with the index streams carry
        finish_reason=_finish(data, message) if done else None,
        usage=Usage(data.get("prompt_eval_count", 0), data.get("eval_count", 0)) if done else None,
    )
