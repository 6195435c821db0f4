"""Native function calling with the builtin tools: the model calls them, Citewell runs them
as the caller, and the model goes on until it answers or a limit stops it.

A client's own tools ride along: when the model calls one of those, that call goes back to
the client (Citewell runs only its own). Streaming passes the model's text through as it
comes and reports each tool call as a status event and each passage found as a source event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from citewell.answer.context import CitedSource
from citewell.answer.limits import MESSAGE_OVERHEAD
from citewell.answer.tools import KnowledgeTools
from citewell.catalog.preset import ModelPreset
from citewell.config import Settings
from citewell.llm.base import LLM, ChatMessage, Completion, Delta, Usage
from citewell.splitters.base import Measure
from citewell.tracing import span

TOOLS_NOTE = (
    "You can search the user's documents with the tools you are given. Passages they return "
    "have a source_id: cite each statement that rests on one as [source_id]."
)


@dataclass(frozen=True)
class Capabilities:
    """Seed 000's matrix for one request: sources injected up front (file context) and
    builtin tools offered (only in native function calling, and only with an LLM)."""

    file_context: bool
    tools: bool


def capabilities(
    requested: str, preset: ModelPreset | None, settings: Settings, llm: LLM | None
) -> Capabilities:
    mode = (
        requested
        or (preset.function_calling if preset else "")
        or settings.answering.function_calling
    )
    builtin = preset.builtin_tools if preset else True
    return Capabilities(
        file_context=preset.file_context if preset else True,
        tools=llm is not None and builtin and mode == "native",
    )


def with_tools_note(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The messages with the note on the tools in the system message (one is added)."""
    out = list(messages)
    if out and out[0].role == "system":
        out[0] = ChatMessage("system", f"{out[0].content}\n\n{TOOLS_NOTE}")
        return out
    return [ChatMessage("system", TOOLS_NOTE), *out]


TOOL_CALL_MARGIN = 256  # tokens for the model's own calls (names, arguments) in the window


def tool_room(
    settings: Settings,
    count: Callable[[str], int],
    messages: Sequence[ChatMessage],
    tools: KnowledgeTools,
    reserve: int,
) -> int:
    """Tokens the tool results may take: the window minus the answer (``reserve``), the
    prompt, the tools' descriptions and a margin for the calls. None left: no tools offered."""
    prompt = sum(count(m.content) + MESSAGE_OVERHEAD for m in messages)
    described = count(json.dumps(tools.definitions()))
    used = reserve + TOOL_CALL_MARGIN + prompt + described
    return settings.llm.llm_context_window - used


@dataclass(frozen=True)
class ToolLimits:
    rounds: int  # model turns that may call tools
    result_tokens: int  # all tool results of one answer together
    seconds: float  # wall time after which tools are no longer offered


@dataclass(frozen=True)
class StreamEvent:
    """An Open WebUI event in a stream: ``status`` (progress) or ``source`` (a passage)."""

    type: str
    data: dict[str, Any]


@dataclass
class ToolRun:
    """What the loop did, for the answer's trace and its sources."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = ""  # which limit ended the loop, if one did
    usage: Usage = field(default_factory=Usage)


class ToolLoop:
    def __init__(
        self,
        llm: LLM,
        model: str,
        options: dict[str, Any],
        tools: KnowledgeTools,
        limits: ToolLimits,
        measure: Measure,
    ) -> None:
        self.llm = llm
        self.model = model
        self.options = options
        self.tools = tools
        self.limits = limits
        self.measure = measure
        self.run = ToolRun()
        self._started = time.monotonic()
        self._tokens_left = limits.result_tokens
        self._rounds = 0
        self._told = False

    # --- plain ---------------------------------------------------------------------------
    def complete(self, messages: Sequence[ChatMessage]) -> Completion:
        history = list(messages)
        while True:
            with span("tool round", round=self._rounds + 1) as current:
                options, offered = self._round(history)
                completion = self.llm.complete(self.model, history, options)
                self._count(completion.usage)
                mine, theirs = self._split(completion.tool_calls)
                current.set_attribute("builtin_calls", len(mine))
                if theirs or not mine or not offered:
                    finish = _finish_reason(completion.finish_reason, theirs)
                    return Completion(completion.text, finish, self.run.usage, theirs)
                answered, _ = self._answer_calls(completion.text, mine)
            history.extend(answered)

    # --- streamed --------------------------------------------------------------------------
    def stream(self, messages: Sequence[ChatMessage]) -> Iterator[Delta | StreamEvent]:
        history = list(messages)
        while True:
            options, offered = self._round(history)
            pieces: dict[int, dict[str, Any]] = {}
            text, finish = [], "stop"
            for delta in self.llm.stream(self.model, history, options):
                if delta.text:
                    text.append(delta.text)
                    yield Delta(delta.text)
                for piece in delta.tool_calls:
                    _merge(pieces, piece)
                finish = delta.finish_reason or finish
                if delta.usage:
                    self._count(delta.usage)
            mine, theirs = self._split(tuple(pieces[i] for i in sorted(pieces)))
            if theirs or not mine or not offered:
                yield from self._finish(theirs, finish)
                return
            for call in mine:
                yield _status(f"{_name(call)}({_arguments(call)})", done=False)
            answered, found = self._answer_calls("".join(text), mine)
            for passage in found:
                yield StreamEvent("source", {"source": passage})
            yield _status(f"{len(found)} passage(s) found", done=True)
            history.extend(answered)

    def _finish(
        self, client_calls: tuple[dict[str, Any], ...], finish: str
    ) -> Iterator[Delta | StreamEvent]:
        if client_calls:
            calls = tuple({**c, "index": i} for i, c in enumerate(client_calls))
            yield Delta(tool_calls=calls)
        yield Delta(finish_reason=_finish_reason(finish, client_calls), usage=self.run.usage)

    # --- one round -----------------------------------------------------------------------
    def _round(self, history: list[ChatMessage]) -> tuple[dict[str, Any], bool]:
        """The options of the next model turn, and whether builtin tools are offered in it.
        Once a limit is reached they are not, and the model is told to answer."""
        offered = self._may_call()
        if not offered and self.run.calls and not self._told:
            history.append(ChatMessage("system", self._stop_note()))
            self._told = True
        own = list(self.options.get("tools") or [])
        options = {k: v for k, v in self.options.items() if k not in ("tools", "tool_choice")}
        if offered:
            options["tools"] = [*own, *self.tools.definitions()]
            options["tool_choice"] = self.options.get("tool_choice") or "auto"
        elif own:
            options["tools"] = own
            if "tool_choice" in self.options:
                options["tool_choice"] = self.options["tool_choice"]
        self._rounds += 1
        return options, offered

    def _may_call(self) -> bool:
        if self._rounds >= self.limits.rounds:
            self.run.stopped = self.run.stopped or f"tool rounds ({self.limits.rounds})"
        elif time.monotonic() - self._started > self.limits.seconds:
            self.run.stopped = self.run.stopped or f"time ({self.limits.seconds:g} s)"
        elif self._tokens_left <= 0:
            limit = self.limits.result_tokens
            self.run.stopped = self.run.stopped or f"tool result tokens ({limit})"
        else:
            return True
        return False

    def _split(
        self, calls: Sequence[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], tuple[dict[str, Any], ...]]:
        """Builtin calls (run here) and the client's (returned to it)."""
        builtin = self.tools.names()
        mine = [c for c in calls if _name(c) in builtin]
        theirs = tuple(c for c in calls if _name(c) not in builtin)
        return mine, theirs

    def _answer_calls(
        self, text: str, calls: list[dict[str, Any]]
    ) -> tuple[list[ChatMessage], list[CitedSource]]:
        """The assistant's calls and a result for each (clipped to the tokens left), and the
        passages they found."""
        complete = [_complete(c, len(self.run.calls) + i) for i, c in enumerate(calls)]
        messages = [ChatMessage("assistant", text, tuple(complete))]
        found: list[CitedSource] = []
        for call in complete:
            name, arguments = _name(call), _arguments(call)
            with span(f"tool {name}", tool=name) as current:
                result = self.tools.run(name, arguments)
                current.set_attribute("passages", len(result.passages))
            content = self._clipped(result.content)
            messages.append(ChatMessage("tool", content, tool_call_id=call["id"]))
            found.extend(result.passages)
            numbers = [p.number for p in result.passages]
            self.run.calls.append({"name": name, "arguments": arguments, "sources": numbers})
        return messages, found

    def _clipped(self, content: str) -> str:
        size = self.measure.size(content)
        if size <= self._tokens_left:
            self._tokens_left -= size
            return content
        kept = self.measure.clip(content, max(self._tokens_left, 0))
        self._tokens_left = 0
        return kept + "\n[cut: the tool results of this answer reached their token limit]"

    def _stop_note(self) -> str:
        return (
            f"The tools cannot be used any more (limit reached: {self.run.stopped}). Answer now "
            "from what you found, and say what you could not look up."
        )

    def _count(self, usage: Usage) -> None:
        self.run.usage = Usage(
            self.run.usage.prompt_tokens + usage.prompt_tokens,
            self.run.usage.completion_tokens + usage.completion_tokens,
        )


def _finish_reason(reported: str, client_calls: Sequence[dict[str, Any]]) -> str:
    """'tool_calls' only when calls go back to the client: builtin calls made after the tools
    were withdrawn are dropped, and the answer ends as any other."""
    if client_calls:
        return "tool_calls"
    return "stop" if reported == "tool_calls" else reported


def _merge(pieces: dict[int, dict[str, Any]], piece: dict[str, Any]) -> None:
    """Adds one streamed piece of a tool call (OpenAI's delta format) to the call it belongs to."""
    call = pieces.setdefault(int(piece.get("index", 0)), {"type": "function", "function": {}})
    if piece.get("id"):
        call["id"] = piece["id"]
    function = piece.get("function") or {}
    if function.get("name"):
        call["function"]["name"] = call["function"].get("name", "") + function["name"]
    if function.get("arguments"):
        call["function"]["arguments"] = (
            call["function"].get("arguments", "") + function["arguments"]
        )


def _complete(call: dict[str, Any], index: int) -> dict[str, Any]:
    return {
        "id": call.get("id") or f"call_builtin_{index}",
        "type": "function",
        "function": {"name": _name(call), "arguments": _arguments(call)},
    }


def _name(call: dict[str, Any]) -> str:
    return str((call.get("function") or {}).get("name") or "")


def _arguments(call: dict[str, Any]) -> str:
    arguments = (call.get("function") or {}).get("arguments")
    if isinstance(arguments, dict):  # some servers send an object, not a JSON string
        return json.dumps(arguments)
    return str(arguments or "{}")


def _status(description: str, done: bool) -> StreamEvent:
    return StreamEvent("status", {"action": "tool", "description": description, "done": done})
