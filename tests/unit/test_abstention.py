"""When the sources cannot answer: what a question names, and which of it no source has."""

from __future__ import annotations

from citewell.answer.abstention import (
    counted_thing,
    named_things,
    not_mentioned,
    singular,
    unknown_names,
)
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


def test_what_a_how_many_question_counts():
    assert counted_thing("How many forklifts did the Foxmoor audit find broken?") == "forklifts"
    assert counted_thing("how many damaged pallets were found?") == "damaged pallets"
    assert counted_thing("How many of the parts in bin C-02 are there?") == "parts"
    assert counted_thing("What is the bin of PX-1200?") == ""


def test_a_counted_thing_no_source_mentions_is_unknown():
    sources = [_source("The Foxmoor audit found 41 damaged pallets in the loading bays.")]
    asked = "How many forklifts did the Foxmoor audit find broken?"
    assert unknown_names(asked, sources) == ["forklifts"]
    # Either number matches, and one word of the counted thing in a source is enough.
    assert unknown_names("How many pallet did the Foxmoor audit find?", sources) == []
    assert unknown_names("How many damaged forklifts were there?", sources) == []
    assert unknown_names("How many bays were audited?", sources) == []
    assert [singular(w) for w in ("forklifts", "boxes", "parties", "status", "glass")] == [
        "forklift", "box", "party", "status", "glass"
    ]  # fmt: skip
