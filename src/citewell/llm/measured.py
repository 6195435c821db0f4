"""An LLM whose calls are counted for /metrics (tokens by model and kind, time: a stream to
its last piece) and traced (a client span per call with OpenTelemetry's gen_ai attributes
and, for a stream, the time to its first piece). Everything else is the wrapped LLM's."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from opentelemetry.trace import SpanKind

from citewell.llm.base import LLM, ChatMessage, Completion, Delta
from citewell.metrics import count_llm_call
from citewell.tracing import tracer


class MeasuredLLM:
    def __init__(self, inner: LLM) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Completion:
        began = time.perf_counter()
        with tracer().start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT) as span:
            span.set_attributes(_request(model, messages, options))
            done = self.inner.complete(model, messages, options)
            usage = done.usage
            span.set_attributes(_usage(usage.prompt_tokens, usage.completion_tokens))
            span.set_attribute("gen_ai.response.finish_reasons", [done.finish_reason])
        count_llm_call(
            model, usage.prompt_tokens, usage.completion_tokens, time.perf_counter() - began
        )
        return done

    def stream(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Iterator[Delta]:
        began = time.perf_counter()
        prompt = completion = 0
        # Not current: a generator's frames run in whatever context consumes them.
        span = tracer().start_span(f"chat {model}", kind=SpanKind.CLIENT)
        span.set_attributes({**_request(model, messages, options), "gen_ai.request.stream": True})
        first = True
        try:
            for delta in self.inner.stream(model, messages, options):
                if first:
                    span.set_attribute("time_to_first_token_ms", _ms(began))
                    first = False
                if delta.usage is not None:
                    prompt, completion = delta.usage.prompt_tokens, delta.usage.completion_tokens
                yield delta
        finally:
            span.set_attributes(_usage(prompt, completion))
            span.end()
        count_llm_call(model, prompt, completion, time.perf_counter() - began)

    def models(self) -> list[str]:
        return self.inner.models()


def _request(
    model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "messages": len(messages),
        "tools_offered": len(options.get("tools") or ()),
    }


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"gen_ai.usage.input_tokens": prompt, "gen_ai.usage.output_tokens": completion}


def _ms(began: float) -> float:
    return round((time.perf_counter() - began) * 1000, 2)


def measured(llm: LLM | None) -> LLM | None:
    return None if llm is None or isinstance(llm, MeasuredLLM) else MeasuredLLM(llm)
