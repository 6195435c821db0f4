"""Splitters by registry name, built from settings."""

from __future__ import annotations

from typing import Any

from citewell.config import Settings
from citewell.embedders.base import Embedder
from citewell.splitters.base import CharacterMeasure, Measure, Splitter, TokenMeasure
from citewell.splitters.markdown import MarkdownHeaderSplitter, merge_small_chunks
from citewell.splitters.recursive import RecursiveSplitter
from citewell.splitters.semantic import MaxMinSemanticSplitter

__all__ = [
    "CharacterMeasure",
    "MarkdownHeaderSplitter",
    "MaxMinSemanticSplitter",
    "RecursiveSplitter",
    "Splitter",
    "TokenMeasure",
    "build_splitter",
    "merge_small_chunks",
]


def build_measure(settings: Settings, embedder: Embedder) -> Measure:
    if settings.text_splitter != "token":
        return CharacterMeasure()
    tokenizer: Any = getattr(embedder, "tokenizer", None)
    if tokenizer is None:
        # Remote embedders keep their tokenizer to themselves; MiniLM's is a close proxy.
        from citewell.embedders.onnx import load_tokenizer

        tokenizer = load_tokenizer(settings.embedding_tokenizer_path)
    return TokenMeasure(tokenizer)


def build_splitter(settings: Settings, embedder: Embedder) -> Splitter:
    measure = build_measure(settings, embedder)
    if settings.text_splitter == "semantic":
        return MaxMinSemanticSplitter(
            embedder, settings.chunk_size, settings.chunk_min_size_target, measure
        )
    inner = RecursiveSplitter(settings.chunk_size, settings.chunk_overlap, measure)
    if settings.markdown_header_splitter:
        return MarkdownHeaderSplitter(inner, settings.chunk_min_size_target)
    return inner
