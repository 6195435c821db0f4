import pytest

from citewell.retrieval.fusion import min_max, reciprocal_rank_fusion, top, weighted_score_fusion

VEC = [("a", 0.9), ("b", 0.8), ("c", 0.1)]
BM25 = [("c", 12.0), ("a", 3.0)]


def test_rrf_sums_reciprocal_ranks_normalised_to_best():
    fused = reciprocal_rank_fusion([VEC, BM25], [1.0, 1.0], k=60)
    best = 2 / 61
    assert fused["a"] == pytest.approx((1 / 61 + 1 / 62) / best)
    assert fused["b"] == pytest.approx((1 / 62) / best)
    assert fused["c"] == pytest.approx((1 / 63 + 1 / 61) / best)
    assert [cid for cid, _ in top(fused, 3)] == ["a", "c", "b"]


def test_rrf_weights_shift_the_order():
    fused = reciprocal_rank_fusion([VEC, BM25], [0.1, 0.9], k=60)
    assert top(fused, 1)[0][0] == "c"


def test_rrf_first_everywhere_scores_one():
    fused = reciprocal_rank_fusion([[("x", 1.0)], [("x", 5.0)]], [0.5, 0.5])
    assert fused["x"] == pytest.approx(1.0)


def test_min_max_and_weighted_fusion():
    assert min_max(BM25) == {"c": 1.0, "a": 0.0}
    assert min_max([("z", 2.0)]) == {"z": 1.0}
    fused = weighted_score_fusion([VEC, BM25], [0.5, 0.5])
    assert fused["c"] == pytest.approx(0.5)
    assert fused["a"] == pytest.approx(0.5)
    assert fused["b"] == pytest.approx(0.5 * (0.8 - 0.1) / 0.8)


def test_top_breaks_ties_by_id():
    assert top({"b": 1.0, "a": 1.0, "c": 2.0}, 2) == [("c", 2.0), ("a", 1.0)]
