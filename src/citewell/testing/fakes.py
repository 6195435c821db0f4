"""Fakes for tests, named as such. They are deterministic and need no model or network."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from citewell.embedders.base import Vectors, normalize
from citewell.retrieval.tokenize import tokenize
from citewell.types import EmbedKind


class FakeHashEmbedder:
    """Bag-of-terms vectors from hashed, stemmed terms: texts sharing words land close together.

    Not a language model: it checks plumbing and ranking logic, not retrieval quality.
    """

    def __init__(self, dimension: int = 64) -> None:
        self.model_id = f"fake-hash:{dimension}"
        self._dimension = dimension
        self.calls: list[list[str]] = []

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> Vectors:
        del kind
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in tokenize(text) or [text]:
                digest = hashlib.sha256(term.encode()).digest()
                out[row, int.from_bytes(digest[:4], "little") % self._dimension] += 1.0
        out[~out.any(axis=1), 0] = 1.0
        return normalize(out)
