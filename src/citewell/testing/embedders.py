"""The embedder role's conformance suite. Subclass it in a test module and give an
``embedder`` fixture (the embedder under test, ready to embed)."""

from __future__ import annotations

import numpy as np

from citewell.embedders.base import Embedder

TEXTS = [
    "The CEO of Example Corp is John Doe",
    "Who is the CEO of Example Corp?",
    "The capital of France is Paris",
    "Paris",
]


class EmbedderConformance:
    def test_it_names_its_space_and_dimension(self, embedder: Embedder) -> None:
        assert isinstance(embedder.model_id, str) and embedder.model_id
        assert isinstance(embedder.dimension, int) and embedder.dimension > 0

    def test_unit_length_float32_rows_in_order(self, embedder: Embedder) -> None:
        vectors = embedder.embed(TEXTS, "document")
        assert vectors.shape == (len(TEXTS), embedder.dimension)
        assert vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)

    def test_deterministic_and_independent_of_batch_order(self, embedder: Embedder) -> None:
        first = embedder.embed(TEXTS, "document")
        again = embedder.embed(list(reversed(TEXTS)), "document")[::-1]
        assert np.allclose(first, again, atol=1e-5)

    def test_queries_land_near_related_documents(self, embedder: Embedder) -> None:
        v = embedder.embed(TEXTS, "query")
        assert v[0] @ v[1] > v[0] @ v[2]

    def test_nothing_in_nothing_out(self, embedder: Embedder) -> None:
        assert embedder.embed([], "document").shape[0] == 0
