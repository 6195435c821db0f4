"""An LLM whose calls are counted for /metrics: tokens by model and kind, and time (a
stream to its last piece). Everything else is the wrapped LLM's."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from citewell.llm.base import LLM, ChatMessage, Completion, Delta
from citewell.metrics import count_llm_call


class MeasuredLLM:
    def __init__(self, inner: LLM) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Completion:
        began = time.perf_counter()
        done = self.inner.complete(model, messages, options)
        usage = done.usage
        count_llm_call(
            model, usage.prompt_tokens, usage.completion_tokens, time.perf_counter() - began
        )
        return done

    def stream(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Iterator[Delta]:
        began = time.perf_counter()
        prompt = completion = 0
        for delta in self.inner.stream(model, messages, options):
            if delta.usage is not None:
                prompt, completion = delta.usage.prompt_tokens, delta.usage.completion_tokens
            yield delta
        count_llm_call(model, prompt, completion, time.perf_counter() - began)

    def models(self) -> list[str]:
        return self.inner.models()


def measured(llm: LLM | None) -> LLM | None:
    return None if llm is None or isinstance(llm, MeasuredLLM) else MeasuredLLM(llm)
