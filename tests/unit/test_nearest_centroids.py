"""Rows' nearest centroids for a vector index's build (stores/lance/nearest.py): every
centroid compared when they are few, those of the row's nearest groups when they are many."""

from __future__ import annotations

import numpy as np
import pytest

from citewell.stores.lance import nearest
from citewell.stores.lance.nearest import NearestCentroids, centroid_groups

DIM = 32


def unit(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def clustered(rows: int, centres: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Noisy copies of random unit centres, and centroids drawn from copies of them (as a
    build's k-means would find them), as benchmarks.million makes its rows."""
    rng = np.random.default_rng(seed)
    base = unit(rng.normal(size=(centres, DIM)))
    vectors = unit(base[rng.integers(0, centres, rows)] + rng.normal(0, 0.1, (rows, DIM)))
    centroids = unit(base[rng.integers(0, centres, 400)] + rng.normal(0, 0.1, (400, DIM)))
    return vectors, centroids


def test_few_centroids_are_each_compared_with_every_row():
    rows, centroids = clustered(3_000, 50, seed=1)
    found = NearestCentroids(centroids[:100]).of(rows)
    assert not NearestCentroids(centroids[:100]).grouped
    assert found.dtype == np.uint32
    assert found.tolist() == np.argmax(rows @ centroids[:100].T, axis=1).tolist()


def test_many_centroids_go_through_groups_and_rows_land_at_or_near_their_nearest(monkeypatch):
    monkeypatch.setattr(nearest, "GROUPED_FROM", 256)
    rows, centroids = clustered(5_000, 120, seed=2)
    assignment = NearestCentroids(centroids)
    assert assignment.grouped and len(assignment.groups) == 20  # about sqrt(400)
    found = assignment.of(rows)
    scores = rows @ centroids.T
    exact = np.argmax(scores, axis=1)
    assert (found == exact).mean() >= 0.98
    # Where another centroid was chosen, it is nearly always about as near as the nearest.
    lost = scores.max(axis=1) - scores[np.arange(len(rows)), found]
    assert np.quantile(lost, 0.99) < 0.02
    # A row's length changes no choice: its products with every centroid scale alike.
    assert assignment.of(rows * 3.0).tolist() == found.tolist()


def test_the_rows_least_near_what_their_groups_gave_are_compared_with_every_centroid(
    monkeypatch,
):
    monkeypatch.setattr(nearest, "GROUPED_FROM", 256)
    rows, centroids = clustered(5_000, 120, seed=3)
    exact = np.argmax(rows @ centroids.T, axis=1)
    monkeypatch.setattr(nearest, "RECHECKED", 0.0)
    grouped_only = NearestCentroids(centroids).of(rows)
    monkeypatch.setattr(nearest, "RECHECKED", 0.1)
    rechecked = NearestCentroids(centroids).of(rows)
    assert (rechecked == exact).sum() > (grouped_only == exact).sum()
    monkeypatch.setattr(nearest, "RECHECKED", 1.0)  # every row: the exact answer
    assert NearestCentroids(centroids).of(rows).tolist() == exact.tolist()


def test_every_centroid_is_in_one_group_and_no_group_is_empty():
    rng = np.random.default_rng(4)
    centroids = unit(rng.normal(size=(400, DIM)))
    centres, members = centroid_groups(centroids)
    assert len(centres) == len(members) == 20
    assert sorted(np.concatenate(members).tolist()) == list(range(400))
    assert np.allclose(np.linalg.norm(centres, axis=1), 1.0, atol=1e-4)
    # Two distinct centroids, many copies: k-means leaves groups with no member, dropped.
    twice = np.repeat(centroids[:2], 32, axis=0)
    centres, members = centroid_groups(twice)
    assert 1 <= len(centres) < 8 and all(len(ids) for ids in members)
    assert sorted(np.concatenate(members).tolist()) == list(range(64))


@pytest.mark.parametrize("rows", [0, 1])
def test_a_batch_of_no_row_or_one_row(monkeypatch, rows):
    monkeypatch.setattr(nearest, "GROUPED_FROM", 256)
    vectors, centroids = clustered(max(rows, 1), 120, seed=6)
    found = NearestCentroids(centroids).of(vectors[:rows])
    assert found.shape == (rows,) and found.dtype == np.uint32
