"""Max-min semantic chunking (Kiss et al.), as the chunking chapter in the seeds describes.

Sentences are taken in order. A sentence joins the current chunk when its closeness (highest
similarity to any sentence in the chunk) beats the chunk's cohesion (lowest pairwise
similarity inside it). Small chunks get a boost on closeness so they grow to a useful size, a
single-sentence chunk compares against the similarity of its sentence and the candidate's
successor, and a hard maximum size always ends the chunk.
"""

from __future__ import annotations

import re

import numpy as np

from citewell.embedders.base import Embedder
from citewell.splitters.base import Measure, make_chunk
from citewell.types import Chunk, Document

SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n{2,}")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in SENTENCE_END.finditer(text):
        if text[start : match.start()].strip():
            spans.append((start, match.start()))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


class MaxMinSemanticSplitter:
    def __init__(
        self,
        embedder: Embedder,
        max_size: int,
        min_size: int,
        measure: Measure,
        initial_threshold: float = 0.3,
    ) -> None:
        self.embedder = embedder
        self.max_size = max_size
        self.chunk_size = max_size  # as the Markdown-header splitter reads it
        self.min_size = min_size
        self.measure = measure
        self.initial_threshold = initial_threshold

    def split(self, document: Document) -> list[Chunk]:
        spans = self.split_span(document.text, 0, len(document.text))
        return [make_chunk(document, s, e) for s, e in spans]

    def split_span(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        spans = [(s + start, e + start) for s, e in sentence_spans(text[start:end])]
        if len(spans) <= 1:
            return spans
        vectors = self.embedder.embed([text[s:e] for s, e in spans], "document")
        sims = vectors @ vectors.T
        groups = self._group(text, spans, sims)
        return [(spans[g[0]][0], spans[g[-1]][1]) for g in groups]

    def _group(self, text: str, spans: list[tuple[int, int]], sims: np.ndarray) -> list[list[int]]:
        groups: list[list[int]] = [[0]]
        cohesion = 1.0
        for i in range(1, len(spans)):
            group = groups[-1]
            size = self.measure.size(text[spans[group[0]][0] : spans[i][1]])
            closeness = float(sims[i, group].max())
            if size <= self.max_size and self._joins(group, i, closeness, cohesion, sims, size):
                cohesion = min(cohesion, float(sims[i, group].min()))
                group.append(i)
            else:
                groups.append([i])
                cohesion = 1.0
        return groups

    def _joins(
        self,
        group: list[int],
        i: int,
        closeness: float,
        cohesion: float,
        sims: np.ndarray,
        size: int,
    ) -> bool:
        if len(group) == 1:
            # Cohesion of one sentence is undefined: compare with the pair that follows.
            following = float(sims[i, i + 1]) if i + 1 < len(sims) else self.initial_threshold
            threshold = min(self.initial_threshold, following)
        else:
            threshold = cohesion
        boost = 1.0 + max(0.0, (self.min_size - size) / self.min_size) if self.min_size else 1.0
        return closeness * boost > threshold
