"""Seed 002's semantic chunking: embed each sentence (or a window of sentences around it),
then cut where one sentence and the next are less similar than a threshold.

The threshold is fixed (``ThresholdSemanticSplitter(threshold=0.3)``, the seed's example) or
dynamic: a percentile of the document's own distances (``percentile=95`` cuts at the 5 % of
sentence pairs that are furthest apart), as the seed suggests. A chunk also ends before it
would pass ``chunk_size``, and a sentence larger than that is cut by size.
"""

from __future__ import annotations

import numpy as np

from citewell.embedders.base import Embedder
from citewell.splitters.base import CharacterMeasure, Measure, make_chunk
from citewell.splitters.recursive import RecursiveSplitter
from citewell.splitters.semantic import sentence_spans
from citewell.types import Chunk, Document

Span = tuple[int, int]


class ThresholdSemanticSplitter:
    def __init__(
        self,
        embedder: Embedder,
        chunk_size: int,
        threshold: float | None = 0.3,
        percentile: float | None = None,
        window: int = 1,
        measure: Measure | None = None,
    ) -> None:
        if (threshold is None) == (percentile is None):
            raise ValueError("give either a fixed threshold or a percentile")
        if percentile is not None and not 0 < percentile < 100:
            raise ValueError("percentile must be between 0 and 100")
        self.embedder = embedder
        self.chunk_size = chunk_size
        self.threshold = threshold
        self.percentile = percentile
        self.window = max(1, window)
        self.measure = measure or CharacterMeasure()
        self._by_size = RecursiveSplitter(chunk_size, 0, self.measure)

    def split(self, document: Document) -> list[Chunk]:
        spans = self.split_span(document.text, 0, len(document.text))
        return [make_chunk(document, s, e) for s, e in spans]

    def split_span(self, text: str, start: int, end: int) -> list[Span]:
        sentences = self._sentences(text, start, end)
        if len(sentences) <= 1:
            return sentences
        similarity = self._neighbour_similarity(text, sentences)
        cut_below = self._cut_level(similarity)
        groups: list[list[Span]] = [[sentences[0]]]
        for sentence, similar in zip(sentences[1:], similarity, strict=True):
            current = groups[-1]
            too_big = self.measure.size(text[current[0][0] : sentence[1]]) > self.chunk_size
            if similar < cut_below or too_big:
                groups.append([sentence])
            else:
                current.append(sentence)
        return [(g[0][0], g[-1][1]) for g in groups]

    def _sentences(self, text: str, start: int, end: int) -> list[Span]:
        """Sentences of the span; one larger than chunk_size is cut by size first."""
        found: list[Span] = []
        for first, last in sentence_spans(text[start:end]):
            s, e = first + start, last + start
            if self.measure.size(text[s:e]) > self.chunk_size:
                found.extend(self._by_size.split_span(text, s, e))
            else:
                found.append((s, e))
        return found

    def _neighbour_similarity(self, text: str, sentences: list[Span]) -> np.ndarray:
        """Similarity of sentence i's window to sentence i+1's, for each i."""
        half = (self.window - 1) // 2
        windows = []
        for i in range(len(sentences)):
            first = max(0, i - half)
            last = min(len(sentences) - 1, i + (self.window - 1 - half))
            windows.append(text[sentences[first][0] : sentences[last][1]])
        vectors = self.embedder.embed(windows, "document")
        similarity: np.ndarray = np.einsum("ij,ij->i", vectors[:-1], vectors[1:])
        return similarity

    def _cut_level(self, similarity: np.ndarray) -> float:
        if self.threshold is not None:
            return self.threshold
        assert self.percentile is not None
        # Distance 1 - s at the p-th percentile is similarity at the (100 - p)-th.
        return float(np.percentile(similarity, 100 - self.percentile))
