"""The embedder role: texts in, L2-normalised float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from citewell.types import EmbedKind

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """One required method. ``model_id`` names the embedding space (cache key, table name)."""

    model_id: str

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> Vectors: ...


def normalize(vectors: Vectors) -> Vectors:
    """Rows scaled to unit length, so cosine similarity is a dot product."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    scaled: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return scaled
