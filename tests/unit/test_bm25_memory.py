"""BM25 over postings in memory: the definition both stores use, checked row by row."""

import math
import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from citewell.stores.memory import bm25 as bm25_memory
from citewell.stores.memory.bm25 import KeywordPostings

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


def test_a_filter_scores_its_rows_as_if_the_table_held_only_them():
    """N, df and the average length come from the allowed rows: what other rows hold
    (another tenant's KBs) changes no score."""
    rng = random.Random(5)
    documents = [" ".join(rng.choices(WORDS, k=rng.randint(1, 20))) for _ in range(200)]
    postings = KeywordPostings.build(pa.array(documents))
    allowed = np.array([i % 3 == 0 for i in range(200)])
    query = ["leav", "day", "day", "absent"]
    kept = postings.scores(query, allowed)
    alone = reference([d for d, a in zip(documents, allowed, strict=True) if a], query)
    assert kept[allowed].tolist() == pytest.approx(alone, rel=1e-5)
    assert not kept[~allowed].any()


def test_a_word_only_other_rows_hold_changes_nothing_within_the_filter():
    """The side channel this closes: B's probe word scored lower when A's rows held it."""
    mine = ["probe alpha", "probe beta", "gamma delta"]
    alone = KeywordPostings.build(pa.array(mine)).scores(["probe", "secret"])
    shared = KeywordPostings.build(pa.array([*mine, "secret probe", "secret words here"]))
    allowed = np.array([True, True, True, False, False])
    scoped = shared.scores(["probe", "secret"], allowed)
    assert scoped[:3].tolist() == pytest.approx(alone.tolist(), rel=1e-6)


def test_a_filter_keeping_every_row_uses_the_stored_impacts():
    documents = ["a b", "b c", "c c d"]
    postings = KeywordPostings.build(pa.array(documents))
    every = np.ones(3, dtype=bool)
    assert postings.scores(["c", "b"], every).tolist() == postings.scores(["c", "b"]).tolist()
    nothing = postings.scores(["c"], np.zeros(3, dtype=bool))
    assert nothing.tolist() == [0.0, 0.0, 0.0]
