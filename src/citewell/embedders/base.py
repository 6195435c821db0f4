"""The embedder role: texts in, L2-normalised float32 vectors out."""

from __future__ import annotations

import threading
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


@runtime_checkable
class LoadsLazily(Protocol):
    """An embedder that loads its model on first use; ``warm`` loads it now (the server
    does at start, so that no request waits for it)."""

    def warm(self) -> None: ...


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


_BACKGROUND: ContextVar[bool] = ContextVar("citewell_background", default=False)
_foreground = [0]  # users' embeddings in flight (uploads), in this process
_foreground_lock = threading.Lock()


@contextmanager
def background() -> Iterator[None]:
    """Embeddings made in this block (the job worker's) leave a core free whenever a user's
    own embedding runs beside them (``foreground``), and use every core otherwise."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


@contextmanager
def foreground() -> Iterator[None]:
    """A user waits for the embeddings made in this block (an upload, a fetched page), unless
    it runs inside ``background`` (the job worker's ingests)."""
    counted = not _BACKGROUND.get()
    if counted:
        with _foreground_lock:
            _foreground[0] += 1
    try:
        yield
    finally:
        if counted:
            with _foreground_lock:
                _foreground[0] -= 1


def sparing_a_core() -> bool:
    """Whether an embedding now should leave one core free (asked again between batches)."""
    return _SPARE_A_CORE.get() or (_BACKGROUND.get() and _foreground[0] > 0)


def normalize(vectors: Vectors) -> Vectors:
    """Rows scaled to unit length, so cosine similarity is a dot product."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    scaled: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return scaled
