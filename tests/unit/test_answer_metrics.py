"""The answer scores on cases worked out by hand."""

from __future__ import annotations

import pytest

from citewell.errors import InvalidInput
from citewell.evaluation import answer_metrics as m
from citewell.evaluation.floors import below_floors, parse_floors


def test_exact_match_and_f1_normalise_case_punctuation_and_articles():
    assert m.exact_match("The Eiffel Tower! [1]", ["eiffel tower"]) == 1.0
    assert m.exact_match("a tower", ["the eiffel tower"]) == 0.0
    assert m.token_f1("“Paris, France” [2]", ["Paris"]) == pytest.approx(2 / 3)
    assert m.token_f1("nothing alike", ["Paris"]) == 0.0


def test_recall_support_and_faithfulness():
    sources = {1: "Mallards eat seeds and insects.", 2: "Geese migrate south in autumn."}
    assert m.passage_recall(list(sources.values()), ["mallards eat seeds"]) == 1.0
    assert m.passage_recall(list(sources.values()), ["swans are white birds"]) == 0.0
    assert m.passage_recall([], []) is None
    assert m.file_recall(["docs/ducks.md"], ["ducks.md", "geese.md"]) == 0.5
    answer = "Mallards eat seeds [1]. Geese migrate [1]."
    assert m.citation_support(answer, sources) == pytest.approx(0.5)  # the second: wrong source
    assert m.citation_support("No markers here.", sources) is None
    # words over three letters: mallards, seeds (held), surely (not)
    assert m.faithfulness("Mallards eat seeds, surely.", list(sources.values())) == 2 / 3


def test_floors_name_what_is_below_or_unknown():
    floors = parse_floors(["ndcg@10=0.6", "token_f1=0.5"])
    measured = {"hybrid.ndcg@10": 0.7, "bm25.ndcg@10": 0.5, "token_f1": None}
    assert below_floors(measured, floors) == ["bm25.ndcg@10 0.5 < 0.6", "token_f1 None < 0.5"]
    with pytest.raises(InvalidInput, match="these are"):
        below_floors(measured, {"bleu": 0.1})
    with pytest.raises(InvalidInput, match="METRIC=VALUE"):
        parse_floors(["ndcg@10"])


def test_answer_contains_cited_share_validity_and_abstention_can_each_fail():
    assert m.answer_contains("It is kept in bin B-14 [1].", ["B-14", "bin 7"]) == 1.0
    assert m.answer_contains("It is kept in bin B-140.", ["B-14"]) == 0.0  # whole words
    assert m.answer_contains("Anything", [""]) == 0.0  # an empty reference matches nothing
    assert m.cited_share(["Leave is long [1].", "It is paid."]) == 0.5
    assert m.cited_share(["No citations here.", "None at all."]) == 0.0
    assert m.cited_share([]) is None
    # Nothing cited is nothing checked: not a validity of 1.
    assert m.citation_validity("No markers at all.", []) is None
    assert m.citation_validity("Cited [1].", []) == 1.0
    assert m.citation_validity("Cited [1].", [7]) == 0.0  # [7] named no source, removed
    assert m.abstained("The sources do not mention the bin.") == 1.0
    assert m.abstained("I don\u2019t know.") == 1.0
    assert m.abstained("PX-8891 is in bin B-14 [1].") == 0.0


def test_claim_sentences_leave_out_questions_and_short_lines():
    from citewell.evaluation.answers import claim_sentences

    text = "Sure!\nWhat is the bin?\nPX-8891 is in bin B-14 [1]. It has twenty units."
    assert claim_sentences(text) == ["PX-8891 is in bin B-14 [1].", "It has twenty units."]
