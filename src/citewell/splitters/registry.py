"""The splitter registry: each ``text_splitter`` value and how it is built from the settings,
the embedder (for semantic splitters) and the measure of size. Plug-ins: the entry point
group ``citewell.splitters``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from citewell.embedders.base import Embedder
from citewell.plugins import Registry
from citewell.splitters.base import Measure, SpanSplitter
from citewell.splitters.recursive import SEPARATORS, RecursiveSplitter
from citewell.splitters.semantic import MaxMinSemanticSplitter
from citewell.splitters.threshold import ThresholdSemanticSplitter
from citewell.splitters.window import FixedSizeSplitter, SlidingWindowSplitter

if TYPE_CHECKING:
    from citewell.config import ChunkingSection

Factory = Callable[["ChunkingSection", Embedder, Measure], SpanSplitter]


def _recursive(section: ChunkingSection, _: Embedder, measure: Measure) -> SpanSplitter:
    separators = tuple(section.chunk_separators) or SEPARATORS
    if separators[-1] != "":
        separators = (*separators, "")  # the last resort: cut anywhere
    return RecursiveSplitter(section.chunk_size, section.chunk_overlap, measure, separators)


def _threshold(section: ChunkingSection, embedder: Embedder, measure: Measure) -> SpanSplitter:
    return ThresholdSemanticSplitter(
        embedder,
        section.chunk_size,
        threshold=section.semantic_threshold,
        window=section.semantic_window,
        measure=measure,
    )


def _percentile(section: ChunkingSection, embedder: Embedder, measure: Measure) -> SpanSplitter:
    return ThresholdSemanticSplitter(
        embedder,
        section.chunk_size,
        threshold=None,
        percentile=section.semantic_percentile,
        window=section.semantic_window,
        measure=measure,
    )


SPLITTERS: Registry[Factory] = Registry("splitters")
SPLITTERS.add("character", _recursive)
SPLITTERS.add("token", _recursive)  # the same, measured in the embedder's tokens
SPLITTERS.add("fixed", lambda s, _, m: FixedSizeSplitter(s.chunk_size, m))
SPLITTERS.add(
    "sliding_window",
    lambda s, _, m: SlidingWindowSplitter(s.chunk_size, s.chunk_overlap, m),
)
SPLITTERS.add(
    "semantic",
    lambda s, e, m: MaxMinSemanticSplitter(e, s.chunk_size, s.chunk_min_size_target, m),
)
SPLITTERS.add("semantic_threshold", _threshold)
SPLITTERS.add("semantic_percentile", _percentile)

# Seed 002's fixed-size and sliding windows ignore structure by definition: no header split.
STRUCTURE_BLIND = frozenset({"fixed", "sliding_window"})
