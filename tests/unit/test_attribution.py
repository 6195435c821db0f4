"""Citations attributed after generation (answer/attribution.py): what is kept, replaced,
added and flagged, where markers go, and which span of a source is quoted."""

from __future__ import annotations

from citewell.answer.attribution import (
    AttributionConfig,
    Attributor,
    attributor_for,
    reranker_similarity,
)
from citewell.answer.attribution_text import answer_units, source_spans, with_markers
from citewell.answer.context import CitedSource
from citewell.config import Settings
from citewell.rerankers.base import apply_scores
from citewell.retrieval.tokenize import tokenize

HANDBOOK = (
    "# Leave policy\n\nParental leave lasts sixteen weeks at full pay. "
    "Sick leave needs a doctor's note after three days."
)
EXPENSES = "Expenses are reimbursed within thirty days of submission. Receipts must be attached."
INVENTORY = "| Part | Bin | Qty |\n|---|---|---|\n| PX-8891 | B-14 | 20 |\n| PX-1200 | C-02 | 5 |"


def _source(number: int, text: str, start: int = 100) -> CitedSource:
    end = start + len(text)
    return CitedSource(
        number, text, f"f{number}", f"doc{number}.md", "text/markdown", 3, start, end, 0.5,
        f"c{number}", "kb",
    )  # fmt: skip


def _attributor(config: AttributionConfig | None = None, similar=None) -> Attributor:
    sources = [_source(1, HANDBOOK), _source(2, EXPENSES), _source(3, INVENTORY)]
    terms = lambda text: tokenize(text, "english")  # noqa: E731
    return Attributor(sources, terms, config or AttributionConfig(), similar)


def _statuses(answer: str, **kwargs) -> list[tuple[str, int | None]]:
    result = _attributor(**kwargs).attribute(answer)
    return [(s.status, s.source) for s in result.sentences]


def test_a_supported_citation_is_kept_and_the_text_left_alone():
    answer = "Parental leave lasts sixteen weeks at full pay [1]."
    result = _attributor().attribute(answer)
    assert result.text == answer
    assert [(s.status, s.source, s.cited) for s in result.sentences] == [("kept", 1, (1,))]
    assert not result.changed


def test_a_citation_of_the_wrong_source_is_replaced():
    result = _attributor().attribute("Parental leave lasts sixteen weeks at full pay [2].")
    assert result.text == "Parental leave lasts sixteen weeks at full pay [1]."
    assert [(s.status, s.cited, s.source) for s in result.sentences] == [("replaced", (2,), 1)]


def test_a_sentence_without_a_citation_gets_one():
    answer = "Parental leave lasts sixteen weeks. Expenses are reimbursed within thirty days!"
    result = _attributor().attribute(answer)
    assert result.text == (
        "Parental leave lasts sixteen weeks [1]. Expenses are reimbursed within thirty days [2]!"
    )
    assert [s.status for s in result.sentences] == ["added", "added"]


def test_a_sentence_no_source_supports_is_flagged_and_marked_only_when_asked():
    answer = "The moon is made of green cheese [1]."
    plain = _attributor().attribute(answer)
    assert plain.text == answer
    assert [s.status for s in plain.unsupported] == ["unsupported"]
    marked = _attributor(AttributionConfig(mark_unsupported=True)).attribute(answer)
    assert marked.text == "The moon is made of green cheese [1] [unsupported]."


def test_greetings_headings_and_questions_are_not_claims():
    answer = "Hello!\n## Summary\nWhat about sick leave?\nSick leave needs a note after three days."
    assert _statuses(answer) == [
        ("not_a_claim", None),
        ("not_a_claim", None),
        ("not_a_claim", None),
        ("added", 1),
    ]


def test_markers_after_the_full_stop_belong_to_the_sentence_before():
    answer = "Parental leave lasts sixteen weeks at full pay. [1] Receipts must be attached. [1]"
    result = _attributor().attribute(answer)
    assert [(s.status, s.source) for s in result.sentences] == [("kept", 1), ("replaced", 2)]
    assert result.text == (
        "Parental leave lasts sixteen weeks at full pay. [1] Receipts must be attached [2]."
    )


def test_the_quote_is_the_supporting_sentence_with_its_offsets_in_the_file():
    result = _attributor().attribute("Sick leave needs a doctor's note after three days.")
    (sentence,) = result.sentences
    assert sentence.quote == "Sick leave needs a doctor's note after three days."
    assert HANDBOOK[sentence.quote_start - 100 : sentence.quote_end - 100] == sentence.quote
    assert sentence.page == 3
    assert result.text[sentence.start : sentence.end] == (
        "Sick leave needs a doctor's note after three days [1]."
    )


def test_a_table_row_is_quoted_with_its_header():
    result = _attributor().attribute("Part PX-8891 is kept in bin B-14.")
    (sentence,) = result.sentences
    assert (sentence.status, sentence.source) == ("added", 3)
    assert sentence.quote.startswith("| Part | Bin | Qty |")
    assert sentence.quote.endswith("| PX-8891 | B-14 | 20 |")


def test_rare_words_decide_between_sources():
    # "leave" is in both sentences of the handbook; the number and the code are not.
    result = _attributor().attribute("PX-1200 is in bin C-02.")
    assert result.sentences[0].quote.endswith("| PX-1200 | C-02 | 5 |")


def test_the_embedding_model_supports_what_the_wording_does_not():
    calls = []

    def similar(claims, spans):
        calls.append((list(claims), list(spans)))
        return [[0.9 if "sixteen" in span else 0.1 for span in spans] for _ in claims]

    answer = "New parents get four months off with salary."
    result = _attributor(similar=similar).attribute(answer)
    (sentence,) = result.sentences
    assert (sentence.status, sentence.source, sentence.by) == ("added", 1, "meaning")
    assert len(calls) == 1  # one call for the whole answer
    without = _attributor(AttributionConfig(min_similarity=0.95), similar).attribute(answer)
    assert without.sentences[0].status == "unsupported"


def test_a_sentence_the_wording_supports_costs_no_model_call():
    def similar(claims, spans):
        raise AssertionError("not needed")

    result = _attributor(similar=similar).attribute("Receipts must be attached [2].")
    assert result.sentences[0].status == "kept"


def test_lines_before_skip_are_left_alone():
    note = "Extractive answer (no LLM configured): best-matching sentences, quoted."
    answer = f"{note}\n\n\u201cReceipts must be attached.\u201d [2]"
    result = _attributor().attribute(answer, skip=len(note))
    assert [(s.status, s.source) for s in result.sentences] == [("kept", 2)]


def test_answer_units_and_marker_placement():
    units = answer_units("- First point here [1].\n- Second, v1.2 of it. [2] Third one")
    assert [u.claim for u in units] == ["First point here.", "Second, v1.2 of it.", "Third one"]
    assert with_markers("Leave is long [3].", [1]) == "Leave is long [1]."
    assert with_markers("\u201cQuoted.\u201d", [2]) == "\u201cQuoted [2].\u201d"
    assert with_markers("No stop", [4], " [unsupported]") == "No stop [4] [unsupported]"


def test_source_spans_are_sentences_rows_and_headings():
    text = "# Title\n\nOne sentence. Two sentence.\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    assert [text[s:e] for s, e in source_spans(text)] == [
        "# Title",
        "One sentence.",
        "Two sentence.",
        "| a | b |",
        "| 1 | 2 |",
    ]


def test_with_small_to_big_the_window_the_model_read_supports_too():
    window = "Parental leave lasts sixteen weeks at full pay. Receipts must be attached."
    chunk = "Receipts must be attached."
    source = CitedSource(
        1, chunk, "f1", "hr.md", "text/markdown", None, 148, 148 + len(chunk), 0.5, "c1",
        "kb", context=window, window_start=100, window_end=100 + len(window),
    )  # fmt: skip
    terms = lambda text: tokenize(text, "english")  # noqa: E731
    result = Attributor([source], terms, AttributionConfig()).attribute(
        "Parental leave lasts sixteen weeks at full pay."
    )
    (sentence,) = result.sentences
    assert (sentence.status, sentence.quote_start) == ("added", 100)
    assert sentence.quote == "Parental leave lasts sixteen weeks at full pay."


def test_a_short_answer_is_attributed_with_the_question_it_answers():
    asked = "In the inventory, what is the bin of PX-1200?"
    result = _attributor().attribute("C-02", question=asked)
    (sentence,) = result.sentences
    assert (result.text, sentence.status) == ("C-02 [3]", "added")
    assert sentence.quote.endswith("| PX-1200 | C-02 | 5 |")
    wrong = _attributor().attribute("B-99", question=asked)  # no span holds the answer
    assert wrong.sentences[0].status == "unsupported"
    alone = _attributor().attribute("C-02")  # without the question: too short to check
    assert alone.sentences[0].status == "not_a_claim"
    asking_back = _attributor().attribute("Which bin?", question=asked)
    assert asking_back.sentences[0].status == "not_a_claim"  # a question claims nothing


class WordReranker:
    """A stand-in reranker (the Reranker protocol, no model): relevance 0.95 for a span
    holding ``word``, else 0.05. Records the queries it was asked."""

    def __init__(self, word: str) -> None:
        self.word, self.queries = word, []

    def rerank(self, query, candidates, top_k):
        self.queries.append(query)
        scores = [0.95 if self.word in c.chunk.text else 0.05 for c in candidates]
        return apply_scores(candidates, scores, top_k)


class FixedEmbedder:
    """A stand-in embedder: every text the same vector (cosine 1.0 with everything)."""

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts, kind):
        self.calls += 1
        return [[1.0, 0.0] for _ in texts]


def test_the_reranker_judges_meaning_when_the_settings_choose_it():
    sources = [_source(1, HANDBOOK), _source(2, EXPENSES)]
    answer = "New parents get four months off with salary."
    reranker, embedder = WordReranker("sixteen"), FixedEmbedder()
    chosen = Settings(citation_checker="reranker")
    attributor = attributor_for(chosen, sources, embedder, reranker)
    assert attributor is not None
    (sentence,) = attributor.attribute(answer).sentences
    assert (sentence.status, sentence.source) == ("added", 1)
    assert reranker.queries == [answer] and embedder.calls == 0
    # The embedding model by default, and when no reranker is configured.
    for settings, given in ((Settings(), reranker), (chosen, None)):
        attributor = attributor_for(settings, sources, embedder, given)
        assert attributor is not None and attributor.attribute(answer).sentences[0].source
    assert embedder.calls == 2 and len(reranker.queries) == 1
    # 1.1: wording alone, no model at all.
    alone = attributor_for(Settings(citation_checker="reranker", citation_min_similarity=1.1),
                           sources, embedder, reranker)  # fmt: skip
    assert alone is not None and alone.attribute(answer).sentences[0].status == "unsupported"
    assert len(reranker.queries) == 1 and embedder.calls == 2


def test_reranker_similarity_keeps_the_spans_order():
    similar = reranker_similarity(WordReranker("b"))
    assert similar(["q1", "q2"], ["a", "b", "c"]) == [[0.05, 0.95, 0.05]] * 2
