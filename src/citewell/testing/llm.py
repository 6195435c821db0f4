"""The LLM engine role's conformance suite. Subclass it and give ``llm`` (the engine) and
``model`` (a model name it serves) fixtures."""

from __future__ import annotations

from citewell.llm.base import LLM, ChatMessage, Completion

MESSAGES = [
    ChatMessage("system", "Answer in one short sentence."),
    ChatMessage("user", "What colour is the sky on a clear day?"),
]


class LLMConformance:
    def test_completes_with_text_and_a_finish_reason(self, llm: LLM, model: str) -> None:
        done = llm.complete(model, MESSAGES, {"max_tokens": 32})
        assert isinstance(done, Completion)
        assert done.text.strip() and done.finish_reason in ("stop", "length")
        assert done.usage.total_tokens >= 0

    def test_streams_text_then_one_finish_reason(self, llm: LLM, model: str) -> None:
        deltas = list(llm.stream(model, MESSAGES, {"max_tokens": 32}))
        assert deltas and "".join(d.text for d in deltas).strip()
        finishes = [i for i, d in enumerate(deltas) if d.finish_reason]
        assert len(finishes) == 1 and deltas[finishes[0]].finish_reason in ("stop", "length")
        assert not "".join(d.text for d in deltas[finishes[0] + 1 :])  # usage may follow

    def test_lists_the_model_it_serves(self, llm: LLM, model: str) -> None:
        assert model in llm.models()
