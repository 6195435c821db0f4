"""A client's /v1/embeddings batch leaves a core free for other users' searches (issue 45):
inside ``spare_a_core`` the ONNX embedder computes on at most threads - 1 threads at once,
with the same vectors."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from citewell.embedders.base import spare_a_core


def _embed_counting(embedder: Any, texts: list[str]) -> tuple[np.ndarray, int]:
    """The vectors, and how many batches ran at once at most."""
    running, widest, lock = [0], [0], threading.Lock()
    run_batch = embedder._run_batch

    def counted(*args: Any, **kwargs: Any) -> Any:
        with lock:
            running[0] += 1
            widest[0] = max(widest[0], running[0])
        try:
            time.sleep(0.01)  # long enough for a second batch to overlap
            return run_batch(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    embedder._run_batch = counted
    try:
        return embedder.embed(texts), widest[0]
    finally:
        del embedder._run_batch  # the class's method again


def test_a_spared_core_runs_one_batch_at_a_time_with_the_same_vectors(onnx_embedder):
    texts = [f"Sentence number {n} about ducks and ponds." for n in range(40)]
    everywhere, wide = _embed_counting(onnx_embedder, texts)
    with spare_a_core():
        spared, narrow = _embed_counting(onnx_embedder, texts)
    assert onnx_embedder.threads == 2
    assert (wide, narrow) == (2, 1)
    np.testing.assert_allclose(spared, everywhere, atol=1e-5)
