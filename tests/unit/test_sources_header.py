"""The X-Citewell-Sources header stays a short ASCII line whatever the sources hold."""

from __future__ import annotations

import json

from citewell.answer.context import CitedSource
from citewell.api.chat import SOURCES_HEADER, SOURCES_HEADER_BUDGET, sources_header


def _source(n: int, text: str, name: str = "Entenbuch – Ära.pdf") -> CitedSource:
    return CitedSource(
        n, text, f"f{n}", name, "application/pdf", 2, 10, 10 + len(text), 0.5, None, "kb"
    )


def test_small_sources_carry_quotes_and_names_in_ascii():
    value = sources_header([_source(1, "Ducks eat plants.\r\nAnd snails.")])[SOURCES_HEADER]
    assert value.isascii() and "\n" not in value and "\r" not in value
    (item,) = json.loads(value)
    assert item["name"] == "Entenbuch – Ära.pdf" and item["content"].startswith("Ducks eat")
    assert (item["id"], item["page"], item["start"]) == (1, 2, 10)


def test_long_quotes_are_cut_then_dropped_then_trailing_sources_left_out():
    few = json.loads(sources_header([_source(n, "ü" * 5000) for n in range(1, 6)])[SOURCES_HEADER])
    assert [s["id"] for s in few] == [1, 2, 3, 4, 5]
    assert all(s["content"].endswith("…") and len(s["content"]) <= 301 for s in few)

    many = [_source(n, "word " * 400, name="n" * 200) for n in range(1, 200)]
    value = sources_header(many)[SOURCES_HEADER]
    kept = json.loads(value)
    assert len(value) <= SOURCES_HEADER_BUDGET
    assert 0 < len(kept) < 199 and "content" not in kept[0]
    assert [s["id"] for s in kept] == list(range(1, len(kept) + 1))


def test_no_sources_is_an_empty_list():
    assert sources_header([]) == {SOURCES_HEADER: "[]"}
