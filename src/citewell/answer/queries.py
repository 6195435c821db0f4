"""Retrieval queries written by the LLM, parsed strictly; any failure means 'use the question'."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from citewell.llm.base import ChatMessage

MAX_QUERIES = 3
HISTORY_MESSAGES = 6
JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_queries(text: str) -> list[str]:
    """The queries in an LLM reply of the form {"queries": [...]}, or [] if it is not that."""
    match = JSON_OBJECT.search(text or "")
    if not match:
        return []
    try:
        data = json.loads(match.group())
    except ValueError:
        return []
    queries = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(queries, list):
        return []
    cleaned = [q.strip() for q in queries if isinstance(q, str) and q.strip()]
    return list(dict.fromkeys(cleaned))[:MAX_QUERIES]


def as_asked(messages: Sequence[ChatMessage]) -> Sequence[ChatMessage]:
    """The conversation up to the last user message. A tool round after it (the assistant's
    tool calls, their results) is part of answering that question, not new history: it must
    search the same, so that the sources and their numbers stay those of the first round."""
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=len(messages))
    return messages[: last + 1]


def is_tool_round(messages: Sequence[ChatMessage]) -> bool:
    """The request continues a turn with tool results: its sources were already sent."""
    return any(m.role == "tool" for m in messages[len(as_asked(messages)) :])


def history_text(messages: Sequence[ChatMessage]) -> str:
    recent = [m for m in messages if m.role in ("user", "assistant")][-HISTORY_MESSAGES:]
    return "\n".join(f"{m.role.upper()}: {m.content}" for m in recent)


def worth_generating(messages: Sequence[ChatMessage]) -> bool:
    """A single-turn question is its own best query: no extra LLM call then."""
    return sum(1 for m in messages if m.role in ("user", "assistant")) > 1
