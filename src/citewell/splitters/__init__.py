"""Splitters by registry name, built from settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from citewell.embedders.base import Embedder
from citewell.splitters.base import (
    ApproximateMeasure,
    CharacterMeasure,
    KeptTokenMeasure,
    Measure,
    Splitter,
    TokenMeasure,
    bounded_size,
)
from citewell.splitters.markdown import MarkdownHeaderSplitter, merge_small_chunks
from citewell.splitters.recursive import RecursiveSplitter
from citewell.splitters.registry import SPLITTERS, STRUCTURE_BLIND
from citewell.splitters.semantic import MaxMinSemanticSplitter
from citewell.splitters.tables import TableHeadings
from citewell.splitters.threshold import ThresholdSemanticSplitter
from citewell.splitters.window import FixedSizeSplitter, SlidingWindowSplitter

if TYPE_CHECKING:
    from citewell.config import Settings

__all__ = [
    "ApproximateMeasure",
    "CharacterMeasure",
    "FixedSizeSplitter",
    "MarkdownHeaderSplitter",
    "MaxMinSemanticSplitter",
    "RecursiveSplitter",
    "SPLITTERS",
    "SlidingWindowSplitter",
    "Splitter",
    "ThresholdSemanticSplitter",
    "KeptTokenMeasure",
    "TokenMeasure",
    "bounded_size",
    "portable",
    "budget_measure",
    "build_splitter",
    "merge_small_chunks",
]


def budget_measure(embedder: Embedder) -> Measure:
    """Token counts for prompt budgets and input limits: the embedder's tokenizer (close to
    most LLMs' counts), else about four characters a token."""
    inner = getattr(embedder, "inner", embedder)
    tokenizer: Any = getattr(inner, "tokenizer", None)
    return KeptTokenMeasure(tokenizer) if tokenizer is not None else ApproximateMeasure()


def portable(splitter: Splitter) -> bool:
    """Whether ``splitter`` may split in another process (a reader's worker): one of the
    built-in splitters measuring characters. Those measuring tokens would carry the
    embedder's tokenizer, the semantic ones the embedder itself, and a plug-in is unknown:
    they split where they were built."""
    if isinstance(splitter, TableHeadings | MarkdownHeaderSplitter):
        return portable(splitter.inner)
    if isinstance(splitter, RecursiveSplitter | SlidingWindowSplitter):
        return type(splitter.measure) in (CharacterMeasure, ApproximateMeasure)
    return False


def build_measure(settings: Settings, embedder: Embedder) -> Measure:
    if settings.chunking.text_splitter != "token" and settings.chunking.chunk_unit != "token":
        return CharacterMeasure()
    tokenizer: Any = getattr(embedder, "tokenizer", None)
    if tokenizer is None:
        # Remote embedders keep their tokenizer to themselves; MiniLM's is a close proxy.
        from citewell.embedders.onnx import load_tokenizer

        tokenizer = load_tokenizer(settings.embedding.embedding_tokenizer_path)
    return TokenMeasure(tokenizer)


def build_splitter(settings: Settings, embedder: Embedder) -> Splitter:
    """The ``text_splitter`` from the registry; inside Markdown sections when
    ``markdown_header_splitter`` is on (structure first), except for the seed's fixed and
    sliding windows, which ignore structure by definition."""
    measure = build_measure(settings, embedder)
    name = settings.chunking.text_splitter
    inner = SPLITTERS.get(name)(settings.chunking, embedder, measure)
    if name in STRUCTURE_BLIND:  # the seed's windows cut anywhere, tables included
        return inner
    if settings.chunking.markdown_header_splitter:
        return TableHeadings(MarkdownHeaderSplitter(inner, settings.chunking.chunk_min_size_target))
    return TableHeadings(inner)
