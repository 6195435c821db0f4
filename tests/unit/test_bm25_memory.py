"""BM25 over postings in memory: the definition both stores use, checked row by row."""

import math
import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from citewell.stores.bm25_memory import KeywordPostings

WORDS = ["leav", "parent", "week", "pay", "sick", "note", "day", "lunch", "noon", "remot"]


def reference(documents: list[str], query: list[str]) -> list[float]:
    """Okapi BM25 written out: k1 1.2, b 0.75, idf ln((N + 1) / (df + 0.5))."""
    split = [d.split() for d in documents]
    average = max(sum(map(len, split)) / len(split), 1.0)
    df = Counter(w for words in split for w in set(words))
    scores = []
    for words in split:
        tf, score = Counter(words), 0.0
        for word, times in Counter(query).items():
            if tf[word]:
                idf = math.log((len(split) + 1) / (df[word] + 0.5))
                norm = tf[word] + 1.2 * (1 - 0.75 + 0.75 * len(words) / average)
                score += times * idf * tf[word] * 2.2 / norm
        scores.append(score)
    return scores


def test_scores_match_the_definition_on_every_row():
    rng = random.Random(7)
    documents = [" ".join(rng.choices(WORDS, k=rng.randint(0, 30))) for _ in range(300)]
    postings = KeywordPostings.build(pa.array(documents))
    for query in (["leav"], ["sick", "note"], ["day", "day", "pay"], ["absent", "noon"]):
        assert postings.scores(query).tolist() == pytest.approx(reference(documents, query))


def test_unknown_terms_empty_rows_and_nulls_score_zero():
    postings = KeywordPostings.build(pa.array(["leav week", "", None, "pay"]))
    assert postings.scores(["absent"]).tolist() == [0.0] * 4
    assert postings.scores(["leav"])[1:].tolist() == [0.0, 0.0, 0.0]
    assert postings.scores(["leav"])[0] > 0


def test_an_empty_table_has_no_postings():
    postings = KeywordPostings.build(pa.array([], type=pa.string()))
    assert postings.scores(["leav"]).tolist() == []
    assert KeywordPostings.build(pa.array(["", None])).scores(["leav"]).tolist() == [0.0, 0.0]


def test_chunked_columns_give_the_same_postings():
    whole = KeywordPostings.build(pa.array(["a b", "b c", "c c d"]))
    parts = KeywordPostings.build(pa.chunked_array([["a b"], ["b c", "c c d"]]))
    assert parts.scores(["c", "b"]).tolist() == whole.scores(["c", "b"]).tolist()


def test_rows_read_in_batches_give_the_same_postings(monkeypatch):
    from citewell.stores import bm25_memory

    rng = random.Random(11)
    documents = [" ".join(rng.choices(WORDS, k=rng.randint(0, 12))) for _ in range(100)]
    documents[40:47] = [""] * 7  # a batch of nothing but empty rows
    whole = KeywordPostings.build(pa.array(documents))
    monkeypatch.setattr(bm25_memory, "BATCH_ROWS", 7)
    batched = KeywordPostings.build(pa.array(documents))
    assert batched.vocabulary == whole.vocabulary
    assert batched.start.tolist() == whole.start.tolist()
    assert batched.rows.tolist() == whole.rows.tolist()
    assert batched.impact.tolist() == pytest.approx(whole.impact.tolist())
    assert batched.scores(["sick", "day"]).tolist() == pytest.approx(
        reference(documents, ["sick", "day"])
    )


def test_rows_outside_the_filter_score_zero_and_the_others_as_before():
    rng = random.Random(5)
    documents = [" ".join(rng.choices(WORDS, k=rng.randint(1, 20))) for _ in range(200)]
    postings = KeywordPostings.build(pa.array(documents))
    allowed = np.array([i % 3 == 0 for i in range(200)])
    whole = postings.scores(["leav", "day", "day"])
    kept = postings.scores(["leav", "day", "day"], allowed)
    assert kept.tolist() == np.where(allowed, whole, 0.0).tolist()
