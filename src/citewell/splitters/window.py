"""Seed 002's fixed-size and sliding-window chunking: cuts every ``size`` units (characters
or tokens) whatever the text says, the window moving ``size - overlap`` units each step.

Chunks are exact slices of the text (a word may be cut, as the seed shows); a slice that is
only whitespace is left out.
"""

from __future__ import annotations

from citewell.splitters.base import CharacterMeasure, Measure, make_chunk, unit_starts
from citewell.types import Chunk, Document


class SlidingWindowSplitter:
    """Windows of ``chunk_size`` units, each starting ``chunk_size - overlap`` after the last."""

    def __init__(self, chunk_size: int, overlap: int = 0, measure: Measure | None = None) -> None:
        if chunk_size < 1 or not 0 <= overlap < chunk_size:
            raise ValueError("need chunk_size >= 1 and 0 <= overlap < chunk_size")
        self.chunk_size = chunk_size
        self.overlap = overlap
        self.measure = measure or CharacterMeasure()

    def split(self, document: Document) -> list[Chunk]:
        spans = self.split_span(document.text, 0, len(document.text))
        return [make_chunk(document, s, e) for s, e in spans]

    def split_span(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        part = text[start:end]
        starts = unit_starts(self.measure, part)
        if not starts:
            return []
        step = self.chunk_size - self.overlap
        spans = []
        for first in range(0, len(starts), step):
            last = first + self.chunk_size
            stop = starts[last] if last < len(starts) else len(part)
            if part[starts[first] : stop].strip():
                spans.append((start + starts[first], start + stop))
            if last >= len(starts):
                break
        return spans


class FixedSizeSplitter(SlidingWindowSplitter):
    """Consecutive pieces of ``chunk_size`` units, no overlap."""

    def __init__(self, chunk_size: int, measure: Measure | None = None) -> None:
        super().__init__(chunk_size, 0, measure)
