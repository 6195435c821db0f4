"""Open WebUI's background tasks: it sends its title, tags, follow-up, query-generation and
autocomplete prompts to the chat model itself, each starting with '### Task:' and asking for
one JSON object. They are not questions: no retrieval, no sources. Without an LLM, the answer
is still the JSON the prompt asks for, made from the conversation's own words."""

from __future__ import annotations

import json
import re

TASK_PREFIX = "### Task:"
HISTORY = re.compile(r"<chat_history>(.*?)</chat_history>", re.S)
TURN = re.compile(r"^(USER|ASSISTANT):\s*(.*)$", re.M | re.I)
ASKED_KEY = re.compile(r'\{\s*"(\w+)"\s*:')
TEXT = re.compile(r"<text>(.*?)</text>", re.S)
STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "please",
        "tell",
        "about",
    )
)


def is_task(text: str) -> bool:
    return text.lstrip().startswith(TASK_PREFIX)


def task_reply(prompt: str) -> str:
    """The JSON object the task prompt asks for, without a model."""
    instructions = prompt.split("<chat_history>", 1)[0]
    keys = ASKED_KEY.findall(instructions)
    key = keys[-1] if keys else "text"
    question = _last_question(prompt)
    values: dict[str, object] = {
        "title": _title(question),
        "tags": ["General"],
        "follow_ups": [],
        "queries": [question] if question else [],
        "text": "",
        "prompt": question,
    }
    return json.dumps({key: values.get(key, "")}, ensure_ascii=False)


def _last_question(prompt: str) -> str:
    history = HISTORY.search(prompt)
    turns = TURN.findall(history.group(1)) if history else []
    asked = [str(text).strip() for role, text in turns if role.upper() == "USER"]
    if any(asked):
        return [a for a in asked if a][-1]
    typed = TEXT.search(prompt)
    return str(typed.group(1)).strip() if typed else ""


def _title(question: str) -> str:
    """Up to four content words of the question's first sentence, capitalised."""
    sentence = re.split(r"[.?!]\s", re.sub(r"#?https?://\S+", " ", question) + " ", maxsplit=1)[0]
    words = re.findall(r"[^\W_][\w'-]*", sentence)
    content = [w for w in words if w.lower() not in STOPWORDS] or words
    return " ".join(w[:1].upper() + w[1:] for w in content[:4]) or "New Chat"
