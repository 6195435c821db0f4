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
)


@dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str


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


@dataclass(frozen=True)
class Delta:
    """One piece of a streamed completion; the last one carries finish_reason (and usage)."""

    text: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None


class LLM(Protocol):
    def complete(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Completion: ...

    def stream(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Iterator[Delta]: ...

    def models(self) -> list[str]: ...
