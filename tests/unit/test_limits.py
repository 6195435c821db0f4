"""Bounded work per request: conversations fitted to the context window, queries clipped,
sign-in failures throttled without lock-outs, lone surrogates cleaned from JSON bodies."""

from __future__ import annotations

import json

import pytest

from citewell.answer.extractive import passage_sentences
from citewell.answer.limits import fit_messages
from citewell.api.hygiene import cleaned_body
from citewell.auth.throttle import LoginThrottle
from citewell.errors import ContextTooLong, RateLimited
from citewell.llm.base import ChatMessage
from citewell.splitters import ApproximateMeasure, TokenMeasure


class CountingMeasure(ApproximateMeasure):
    """Four characters a token; remembers the longest text it was asked to count."""

    def __init__(self) -> None:
        self.longest = 0

    def size(self, text: str) -> int:
        self.longest = max(self.longest, len(text))
        return super().size(text)


def test_old_turns_go_first_and_system_and_last_stay():
    messages = [
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "a" * 400),  # 100 tokens
        ChatMessage("assistant", "b" * 400),
        ChatMessage("user", "c" * 40),
    ]
    kept, dropped = fit_messages(messages, 130, ApproximateMeasure())
    assert dropped == 1
    assert [m.role for m in kept] == ["system", "assistant", "user"]
    kept, dropped = fit_messages(messages, 1000, ApproximateMeasure())
    assert dropped == 0 and kept == messages


def test_a_huge_last_message_is_refused_without_being_counted():
    measure = CountingMeasure()
    huge = [ChatMessage("user", "typewriter " * 800_000)]
    with pytest.raises(ContextTooLong, match="8,800,000 characters"):
        fit_messages(huge, 7168, measure)
    assert measure.longest == 0


def test_token_clip_keeps_the_start_or_the_end(onnx_embedder):
    measure = TokenMeasure(onnx_embedder.tokenizer)
    text = " ".join(f"word{i}" for i in range(2000)) + " the question?"
    start = measure.clip(text, 50)
    end = measure.clip(text, 50, keep_end=True)
    assert text.startswith(start) and measure.size(start) == 50
    assert end.endswith("the question?") and measure.size(end) <= 50
    assert measure.clip("short", 50) == "short"
    # The embedder's own tokenizer still truncates: clipping used a copy of it.
    assert onnx_embedder.tokenizer.truncation["max_length"] == 256


def test_a_query_costs_no_more_than_its_first_tokens(app):
    app.ingest_texts([("t.txt", "The typewriter was invented in 1868.")], "kb")
    long = app.search("typewriter invented " * 100_000, ["kb"])
    short = app.search(app.clip_query("typewriter invented " * 100_000), ["kb"])
    assert [r.chunk_id for r in long] == [r.chunk_id for r in short]


def test_failures_per_address_wait_and_a_right_password_clears_them():
    throttle = LoginThrottle(per_address=2, per_name=100)
    for _ in range(2):
        throttle.check("alice", "10.0.0.1")
        throttle.failed("alice", "10.0.0.1")
    with pytest.raises(RateLimited, match="from your address") as raised:
        throttle.check("alice", "10.0.0.1")
    assert int(raised.value.headers["Retry-After"]) >= 1
    throttle.check("alice", "10.0.0.2")  # another address is not affected
    throttle.succeeded("alice", "10.0.0.2")


def test_many_addresses_pause_new_ones_only():
    throttle = LoginThrottle(per_address=10, per_name=3)
    throttle.succeeded("alice", "known")
    for n in range(3):
        throttle.failed("alice", f"attacker-{n}")
    with pytest.raises(RateLimited, match="paused for new addresses"):
        throttle.check("alice", "attacker-9")
    throttle.check("alice", "known")
    throttle.check("bob", "attacker-9")  # per name


def test_lone_surrogates_become_replacement_characters():
    body = json.dumps({"a": ["x\ud800y", {"\udfffk": "\ud83d\ude00"}], "n": 1}).encode()
    cleaned = json.loads(cleaned_body(body))
    assert cleaned == {"a": ["x\ufffdy", {"\ufffdk": "\U0001f600"}], "n": 1}
    plain = b'{"a": "no escapes here"}'
    assert cleaned_body(plain) is plain
    assert cleaned_body(b'{"a": "\\ud800') == b'{"a": "\\ud800'  # not JSON: left to the route


def test_quoted_sentences_leave_headings_and_foreign_citations_out():
    text = "# Merger plan\n\nThe fund buys ponds (Box 1) [2]. Ducks eat seeds [3, 4] daily."
    sentences = [s for _, s in passage_sentences(text)]
    assert sentences == ["The fund buys ponds (Box 1).", "Ducks eat seeds daily."]
    assert [s for _, s in passage_sentences("Introduction\n\nIt was loud.")] == ["It was loud."]
