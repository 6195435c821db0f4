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
    from citewell.config import Settings

Factory = Callable[["Settings", Embedder, Measure], SpanSplitter]


def _recursive(settings: Settings, _: Embedder, measure: Measure) -> SpanSplitter:
    separators = tuple(settings.chunking.chunk_separators) or SEPARATORS
    if separators[-1] != "":
        separators = (*separators, "")  # the last resort: cut anywhere
    return RecursiveSplitter(
        settings.chunking.chunk_size, settings.chunking.chunk_overlap, measure, separators
    )


def _threshold(settings: Settings, embedder: Embedder, measure: Measure) -> SpanSplitter:
    return ThresholdSemanticSplitter(
        embedder,
        settings.chunking.chunk_size,
        threshold=settings.chunking.semantic_threshold,
        window=settings.chunking.semantic_window,
        measure=measure,
    )


def _percentile(settings: Settings, embedder: Embedder, measure: Measure) -> SpanSplitter:
    return ThresholdSemanticSplitter(
        embedder,
        settings.chunking.chunk_size,
        threshold=None,
        percentile=settings.chunking.semantic_percentile,
        window=settings.chunking.semantic_window,
        measure=measure,
    )


SPLITTERS: Registry[Factory] = Registry("splitters")
SPLITTERS.add("character", _recursive)
SPLITTERS.add("token", _recursive)  # the same, measured in the embedder's tokens
SPLITTERS.add("fixed", lambda s, _, m: FixedSizeSplitter(s.chunking.chunk_size, m))
SPLITTERS.add(
    "sliding_window",
    lambda s, _, m: SlidingWindowSplitter(s.chunking.chunk_size, s.chunking.chunk_overlap, m),
)
SPLITTERS.add(
    "semantic",
    lambda s, e, m: MaxMinSemanticSplitter(
        e, s.chunking.chunk_size, s.chunking.chunk_min_size_target, m
    ),
)
SPLITTERS.add("semantic_threshold", _threshold)
SPLITTERS.add("semantic_percentile", _percentile)

# Seed 002's fixed-size and sliding windows ignore structure by definition: no header split.
STRUCTURE_BLIND = frozenset({"fixed", "sliding_window"})
