"""The LLM role: chat messages in, a completion (or a stream of text deltas) out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# Generation options passed through from a chat request to the LLM.
CHAT_OPTIONS = (
    "max_tokens",
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "stop",
    "user",
    "seed",
    # A client's own tools and output format go to the LLM as they are; its tool calls come
    # back to the client (Citewell runs none of them).
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
)


@dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str
    tool_calls: tuple[dict[str, Any], ...] = ()  # an assistant's calls, as OpenAI sends them
    tool_call_id: str = ""  # a 'tool' message: the call it answers
    name: str = ""

    def wire(self) -> dict[str, Any]:
        """The message in OpenAI's format."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = list(self.tool_calls)
            message["content"] = self.content or None
        if self.tool_call_id:
            message["tool_call_id"] = self.tool_call_id
        if self.name:
            message["name"] = self.name
        return message


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    tool_calls: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Delta:
    """One piece of a streamed completion; the last one carries finish_reason (and usage).
    ``tool_calls``: pieces of tool calls in OpenAI's delta format (with their ``index``)."""

    text: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()


class LLM(Protocol):
    def complete(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Completion: ...

    def stream(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Iterator[Delta]: ...

    def models(self) -> list[str]: ...
