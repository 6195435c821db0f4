"""The embedder role: texts in, L2-normalised float32 vectors out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
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


_SPARE_A_CORE: ContextVar[bool] = ContextVar("citewell_spare_a_core", default=False)


@contextmanager
def spare_a_core() -> Iterator[None]:
    """Embeddings made in this block leave one core free (where the embedder can say how
    many it uses): a client's big batch must not stall other users' searches (issue 45)."""
    token = _SPARE_A_CORE.set(True)
    try:
        yield
    finally:
        _SPARE_A_CORE.reset(token)


def sparing_a_core() -> bool:
    return _SPARE_A_CORE.get()


def normalize(vectors: Vectors) -> Vectors:
    """Rows scaled to unit length, so cosine similarity is a dot product."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    scaled: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return scaled
