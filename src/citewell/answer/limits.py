"""How much of a conversation goes to the model: everything that fits its context window,
the oldest turns left out first. Huge messages are refused before anything tokenizes them."""

from __future__ import annotations

from collections.abc import Sequence

from citewell.errors import ContextTooLong
from citewell.llm.base import ChatMessage
from citewell.splitters.base import Measure
from citewell.types import MAX_CHARS_PER_TOKEN

MESSAGE_OVERHEAD = 4  # tokens a chat template adds around each message


def conversation_cost(texts: Sequence[str], limit: int, measure: Measure) -> int:
    """Tokens of ``texts`` (with per-message overhead), or ``limit + 1`` once they are surely
    over ``limit``: text beyond limit × MAX_CHARS_PER_TOKEN characters is never tokenized."""
    if sum(len(t) for t in texts) > max(0, limit) * MAX_CHARS_PER_TOKEN:
        return limit + 1
    if len(texts) * MESSAGE_OVERHEAD > limit:  # many tiny messages: over without counting
        return limit + 1
    return sum(measure.size(t) + MESSAGE_OVERHEAD for t in texts)


def fit_messages(
    messages: Sequence[ChatMessage], limit: int, measure: Measure
) -> tuple[list[ChatMessage], int]:
    """The messages within ``limit`` tokens and how many were left out. System messages and
    the last user message (with anything after it) are always kept; earlier turns go, oldest
    first. ContextTooLong when the kept ones alone do not fit."""
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    required = [i for i, m in enumerate(messages) if m.role == "system" or i >= last_user]
    used = conversation_cost([messages[i].content for i in required], limit, measure)
    if used > limit:
        chars = sum(len(messages[i].content) for i in required)
        raise ContextTooLong(_too_long(chars, limit))
    kept = set(required)
    for i in reversed(range(last_user)):
        if i in kept:
            continue
        cost = conversation_cost([messages[i].content], limit - used, measure)
        if used + cost > limit:
            break  # this turn and every older one are left out
        used += cost
        kept.add(i)
    return [m for i, m in enumerate(messages) if i in kept], len(messages) - len(kept)


def _too_long(chars: int, limit: int) -> str:
    return (
        f"The conversation does not fit the model's context: the system messages and the last "
        f"message have {chars:,} characters, and {max(0, limit):,} tokens are left for them "
        "(llm_context_window minus max_tokens or llm_reserved_tokens). Shorten it, or upload "
        "the text as a file (POST /api/v1/knowledge/{kb}/files) and ask about it."
    )
