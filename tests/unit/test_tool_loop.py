"""The tool loop's limits, with an in-process scripted LLM that always calls a tool."""

from __future__ import annotations

import json

from citewell.answer.agent import StreamEvent, ToolLimits, ToolLoop
from citewell.answer.tools import ToolResult
from citewell.llm.base import ChatMessage, Completion, Delta, Usage
from citewell.splitters.base import CharacterMeasure

LOOKUP = {"type": "function", "function": {"name": "lookup", "parameters": {}}}


class EagerLLM:
    """Calls 'lookup' whenever it is offered; answers when it is not."""

    def __init__(self, stubborn: bool = False) -> None:
        self.sent: list[tuple[list[ChatMessage], dict]] = []
        self.stubborn = stubborn  # calls 'lookup' even when no tools are offered

    def complete(self, model, messages, options):
        self.sent.append((list(messages), options))
        if options.get("tools") or self.stubborn:
            call = {"id": f"c{len(self.sent)}", "type": "function",
                    "function": {"name": "lookup", "arguments": "{}"}}  # fmt: skip
            return Completion("", "tool_calls", Usage(10, 2), (call,))
        return Completion("Done [1].", "stop", Usage(10, 3))

    def stream(self, model, messages, options):
        completion = self.complete(model, messages, options)
        if completion.tool_calls:
            call = completion.tool_calls[0]
            yield Delta(tool_calls=({"index": 0, **call},))
        else:
            yield Delta(completion.text)
        yield Delta(finish_reason=completion.finish_reason, usage=completion.usage)

    def models(self):
        return ["eager"]


class LongTool:
    """One builtin tool whose result is 100 characters."""

    def definitions(self):
        return [LOOKUP]

    def names(self):
        return {"lookup"}

    def run(self, name, arguments):
        return ToolResult(json.dumps({"text": "x" * 88}))


def _loop(llm, **limits) -> ToolLoop:
    chosen = ToolLimits(**{"rounds": 5, "result_tokens": 10_000, "seconds": 60.0, **limits})
    return ToolLoop(llm, "eager", {}, LongTool(), chosen, CharacterMeasure())


def test_result_tokens_run_out_then_the_model_must_answer():
    llm = EagerLLM()
    loop = _loop(llm, result_tokens=150)
    answer = loop.complete([ChatMessage("user", "q")])
    assert answer.text == "Done [1]." and loop.run.stopped == "tool result tokens (150)"
    results = [m.content for m in llm.sent[-1][0] if m.role == "tool"]
    assert len(results) == 2 and results[1].endswith("reached their token limit]")
    assert "limit reached: tool result tokens" in llm.sent[-1][0][-1].content
    assert answer.usage.prompt_tokens == 10 * len(llm.sent)  # every round counted


def test_time_runs_out():
    llm = EagerLLM()
    loop = _loop(llm, seconds=1e-9)
    loop.complete([ChatMessage("user", "q")])
    assert loop.run.stopped.startswith("time") and not loop.run.calls
    assert len(llm.sent) == 1 and "tools" not in llm.sent[0][1]


def test_a_stream_reports_calls_and_ends_with_the_answer():
    llm = EagerLLM()
    items = list(_loop(llm, rounds=2).stream([ChatMessage("user", "q")]))
    events = [i for i in items if isinstance(i, StreamEvent)]
    assert [e.data["done"] for e in events] == [False, True, False, True]
    text = "".join(i.text for i in items if isinstance(i, Delta))
    assert text == "Done [1]." and items[-1].finish_reason == "stop"


def test_calls_after_the_tools_are_withdrawn_are_dropped():
    llm = EagerLLM(stubborn=True)
    answer = _loop(llm, rounds=1).complete([ChatMessage("user", "q")])
    assert answer.finish_reason == "stop" and not answer.tool_calls
    items = list(_loop(EagerLLM(stubborn=True), rounds=1).stream([ChatMessage("user", "q")]))
    assert items[-1].finish_reason == "stop"
    assert not any(isinstance(i, Delta) and i.tool_calls for i in items)
