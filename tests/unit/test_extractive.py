import re

from citewell.answer.extractive import extractive_answer
from citewell.types import ScoredChunk, StoredChunk


def result(cid: str, text: str, score: float) -> ScoredChunk:
    chunk = StoredChunk(
        id=cid,
        file_id="f" + cid,
        kb_ids=("kb",),
        index=0,
        text=text,
        start=5,
        end=5 + len(text),
        page=2,
        headings=(),
        file_name=f"{cid}.pdf",
        terms="",
    )
    return ScoredChunk(chunk_id=cid, score=score, chunk=chunk)


def test_best_sentences_are_cited_per_chunk():
    results = [
        result("a", "The office opens at nine. Parental leave lasts sixteen weeks.", 0.9),
        result("b", "Leave requests go to HR. The cafeteria is on floor two.", 0.5),
    ]
    answer = extractive_answer("How long is parental leave?", results, "english")
    assert answer.extractive
    assert "\u201cParental leave lasts sixteen weeks.\u201d [1]" in answer.text
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer.text)}
    assert cited <= {c.number for c in answer.citations}
    assert answer.citations[0].file_name == "a.pdf" and answer.citations[0].page == 2
    assert (answer.citations[0].start, answer.citations[0].end) == (
        5,
        5 + len(results[0].chunk.text),
    )


def test_no_results_says_so():
    answer = extractive_answer("anything", [], "english")
    assert answer.citations == () and "No passage" in answer.text


def test_a_table_question_is_answered_with_its_row_not_the_filler():
    """The case from issue 67: the filler sentence every chunk shares was quoted three times,
    and not the row holding the part, which was in the top source."""
    title = "Warehouse inventory audit 2032"
    top = (
        f"This section of the {title} summarises observations.\n\n"
        "| Part | Bin | Quantity |\n|---|---|---|\n"
        "| PX-1200 | C-02 | 5 |\n| PX-8891 | B-14 | 20 |\n| PX-3310 | A-07 | 12 |"
    )
    others = [
        f"This section of the {title} summarises observations. Pallets were counted.",
        f"This section of the {title} summarises observations. Two auditors signed.",
    ]
    results = [result("a", top, 0.9), result("b", others[0], 0.5), result("c", others[1], 0.4)]
    answer = extractive_answer(f"In the {title}, what is the bin of PX-8891?", results, "english")
    assert "\u201cPart: PX-8891; Bin: B-14; Quantity: 20\u201d [1]" in answer.text
    assert answer.text.count("summarises observations") <= 1  # never the same sentence twice
    assert "PX-1200" not in answer.text  # another row would leave the reader guessing


def test_a_chunk_of_later_rows_is_read_with_the_header_it_carries():
    chunk = StoredChunk(
        id="t", file_id="ft", kb_ids=("kb",), index=1, text="| PX-8891 | B-14 | 20 |",
        start=0, end=22, page=None,
        headings=("Stock", "| Part | Bin | Quantity |\n|---|---|---|"),
        file_name="audit.md", terms="",
    )  # fmt: skip
    found = ScoredChunk(chunk_id="t", score=1.0, chunk=chunk)
    answer = extractive_answer("What is the bin of PX-8891?", [found], "english")
    assert answer.text == "\u201cPart: PX-8891; Bin: B-14; Quantity: 20\u201d [1]"
