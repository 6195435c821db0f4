import math

import pytest

from citewell.evaluation.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k


def test_ndcg_perfect_and_partial():
    rel = {"a": 1, "b": 1}
    assert ndcg_at_k(["a", "b", "x"], rel, 10) == pytest.approx(1.0)
    expected = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["x", "a"], rel, 10) == pytest.approx(expected)
    assert ndcg_at_k(["x"], rel, 10) == 0.0


def test_ndcg_uses_graded_gains():
    assert ndcg_at_k(["low", "high"], {"high": 2, "low": 1}, 10) < 1.0


def test_recall_and_mrr():
    rel = {"a": 1, "b": 1, "c": 0}
    assert recall_at_k(["a", "x", "b"], rel, 2) == 0.5
    assert recall_at_k(["a", "x", "b"], rel, 3) == 1.0
    assert mrr_at_k(["x", "y", "b"], rel, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x"], rel, 10) == 0.0


def test_percentile_interpolates():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 95) == 5
    assert percentile([], 50) == 0.0
