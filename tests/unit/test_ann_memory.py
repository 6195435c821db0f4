"""The in-memory IVF index of a big table's copy: recall against exact search, filters,
and exact scores for what it returns."""

import numpy as np
import pytest

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory import ann as ann_memory
from citewell.stores.memory import vectors as vectors_module
from citewell.stores.memory.ann import MemoryVectorIndex, exact_top
from citewell.stores.memory.vectors import FloatVectors, QuantizedVectors, fine_codes, int8_codes


def clustered(rows: int, dimension: int = 32, seed: int = 0) -> np.ndarray:
    """Rows around 200 random centres, normalised, as embeddings of related texts are."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(200, dimension))
    vectors = centres[rng.integers(0, 200, rows)] + 0.6 * rng.normal(size=(rows, dimension))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def exact(vectors, query, k, allowed=None):
    scores = vectors @ query
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    return np.argsort(-scores)[:k]


@pytest.fixture(scope="module")
def built():
    vectors = clustered(20_000)
    return vectors, MemoryVectorIndex.build(vectors, VectorIndexPolicy())


def recall(index, vectors, queries, k, allowed=None) -> float:
    found = 0
    for query in queries:
        rows, _ = index.search(query, k, allowed)
        found += len(set(rows) & set(exact(vectors, query, k, allowed)))
    return found / (k * len(queries))


def test_recall_at_50_against_exact_search(built):
    vectors, index = built
    assert index.partitions == round(20_000**0.5) and index.probes(20_000) == 60
    queries = clustered(40, seed=1)
    assert recall(index, vectors, queries, 50) >= 0.95


def test_scores_are_exact_cosines_best_first(built):
    vectors, index = built
    query = clustered(1, seed=2)[0]
    rows, scores = index.search(query, 10, None)
    assert np.allclose(scores, vectors[rows] @ query, atol=1e-6)
    assert list(scores) == sorted(scores, reverse=True)


def test_a_filter_keeping_many_rows_masks_the_others(built, monkeypatch):
    monkeypatch.setattr(ann_memory, "EXACT_ROWS", 100)  # the bitmap path, not the exact scan
    vectors, index = built
    allowed = np.random.default_rng(3).random(len(vectors)) < 0.3
    queries = clustered(20, seed=4)
    for query in queries:
        rows, _ = index.search(query, 20, allowed)
        assert len(rows) == 20 and allowed[rows].all()
    assert recall(index, vectors, queries, 20, allowed) >= 0.95


def test_a_filter_keeping_few_rows_is_searched_exactly(built):
    vectors, index = built
    allowed = np.zeros(len(vectors), dtype=bool)
    allowed[[5, 500, 5000]] = True
    rows, _ = index.search(clustered(1, seed=5)[0], 10, allowed)
    assert sorted(rows) == [5, 500, 5000]
    assert len(index.search(vectors[0], 10, np.zeros(len(vectors), dtype=bool))[0]) == 0


def test_few_rows_get_no_index_and_exact_search():
    vectors = clustered(100)
    index = MemoryVectorIndex.build(vectors, VectorIndexPolicy())
    assert index.index is None and index.partitions == 0
    query = clustered(1, seed=6)[0]
    rows, _ = index.search(query, 5, None)
    assert list(rows) == list(exact(vectors, query, 5))


@pytest.mark.parametrize("quantized", [False, True])
def test_the_exact_top_k_of_many_queries_in_one_pass(tmp_path, monkeypatch, quantized):
    monkeypatch.setattr(vectors_module, "SCAN_BATCH", 700)  # several blocks, the last short
    matrix = clustered(5_000)
    if quantized:
        codes, scales = int8_codes(matrix)
        np.save(tmp_path / "fine.npy", fine_codes(matrix, codes, scales))
        vectors = QuantizedVectors(codes, scales, tmp_path / "fine.npy")
        matrix = vectors.take(np.arange(len(matrix)))  # the scores the codes give
    else:
        vectors = FloatVectors(matrix)
    queries = clustered(12, seed=4)
    for query, rows in zip(queries, exact_top(vectors, queries, 30), strict=True):
        assert set(rows.tolist()) == set(exact(matrix, query, 30).tolist())
    assert [len(rows) for rows in exact_top(FloatVectors(matrix[:20]), queries, 30)] == [20] * 12
    assert np.allclose(vectors.all(queries[0]), matrix @ queries[0], atol=1e-5)


def test_recall_counts_the_exact_neighbours_found(built):
    _, index = built
    assert 0.95 <= index.recall(20) <= 1.0
