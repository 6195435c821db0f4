"""A big snapshot's top k is sought among the rows at or above a sample's k-th best: the
same rows a full sort gives, ties, zeros and masked rows included."""

import numpy as np
import pytest

from citewell.stores.memory.snapshot import _at_least_kth


@pytest.mark.parametrize("k", [1, 8, 50, 500])
@pytest.mark.parametrize("shape", ["spread", "mostly_zero", "masked", "ties"])
def test_no_row_of_the_true_top_k_is_left_out(shape, k):
    rng = np.random.default_rng(k)
    scores = rng.random(200_000).astype(np.float32)
    if shape == "mostly_zero":
        scores[rng.random(len(scores)) < 0.999] = 0.0  # few rows hold a query term
    if shape == "masked":
        scores[rng.random(len(scores)) < 0.9] = -np.inf  # rows a filter keeps out
    if shape == "ties":
        scores = np.round(scores, 2)
    admitted = np.isfinite(scores) & (scores > 0)
    rows = _at_least_kth(scores, k, admitted)
    assert admitted[rows].all()
    kept = np.sort(scores[admitted])
    if len(kept) <= k:
        assert len(rows) == len(kept)
        return
    kth = kept[-k]
    assert set(np.flatnonzero(admitted & (scores > kth))) <= set(rows)
    assert np.count_nonzero(scores[rows] >= kth) >= k
    if shape == "spread":
        assert len(rows) < len(scores) // 4  # it did narrow the search


def test_small_arrays_are_ranked_whole():
    scores = np.arange(1000, dtype=np.float32)
    assert len(_at_least_kth(scores, 10, scores > 0)) == 999


def test_kb_filters_hold_the_same_rows_as_masks_or_as_row_numbers():
    import pyarrow as pa

    from citewell.stores.memory.snapshot import kb_rows_of

    kbs = [["big"], ["big", "small"], [], ["big"], None, ["big", "other"], ["big"], ["big"]]
    kbs += [["big"]] * 16
    found = kb_rows_of(pa.chunked_array([pa.array(kbs[:3]), pa.array(kbs[3:])]), len(kbs))
    assert found["big"].dtype == np.bool_  # over an eighth of the rows: a mask
    assert np.flatnonzero(found["big"]).tolist() == [0, 1, 3, 5, *range(6, 24)]
    assert found["small"].tolist() == [1] and found["other"].tolist() == [5]
    assert kb_rows_of(pa.array([[], None], type=pa.list_(pa.string())), 2) == {}
