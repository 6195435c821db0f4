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
