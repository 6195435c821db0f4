"""When the sources cannot answer: what a question names, and which of it no source has."""

from __future__ import annotations

from citewell.answer.abstention import named_things, not_mentioned, unknown_names
from citewell.answer.context import CitedSource


def _source(text: str, name: str = "audit.md") -> CitedSource:
    return CitedSource(1, text, "f1", name, "text/markdown", None, 0, len(text), 0.5, "c1", "kb")


def test_names_codes_and_long_numbers_are_what_a_question_names():
    asked = "In the Willow Creek audit, what is the bin of PX-9492? Who checked it in 2031 or 3?"
    assert named_things(asked) == ["Willow", "Creek", "PX-9492", "2031"]
    # Words capitalised because they start a sentence name nothing.
    assert named_things("What do ducks eat? How long is parental leave?") == []


def test_a_name_no_source_mentions_is_unknown():
    sources = [_source("| PX-1200 | C-02 | 5 |"), _source("Staff at Willow Creek.", "wc.md")]
    asked = "In the Willow Creek audit, what is the bin of PX-9492?"
    assert unknown_names(asked, sources) == ["PX-9492"]
    assert unknown_names("What is the bin of PX-1200 at Willow Creek?", sources) == []
    assert unknown_names("Who runs Pinecrest?", [_source("x", "pinecrest-audit.md")]) == []
    assert unknown_names("Who runs Pinecrest?", []) == []  # no sources: nothing to judge
    assert unknown_names("What is Willow Creek's bin?", sources) == []  # a possessive
    assert "\u201cPX-9492\u201d" in not_mentioned(["PX-9492"])
