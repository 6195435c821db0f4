"""The splitter role: a Document in, Chunks with char offsets out.

Sizes are measured by a ``Measure``: characters by default, or tokens of the embedder's own
tokenizer. A measure is built per text, so token counts of any span come from one encoding.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Any, Protocol

from citewell.types import Chunk, Document

SpanLength = Callable[[int, int], int]


class Splitter(Protocol):
    def split(self, document: Document) -> list[Chunk]: ...


class Measure(Protocol):
    """How big text is: ``spans(text)`` gives a length function over [start, end) of that text."""

    def spans(self, text: str) -> SpanLength: ...

    def size(self, text: str) -> int: ...


class CharacterMeasure:
    def spans(self, text: str) -> SpanLength:
        del text
        return lambda start, end: end - start

    def size(self, text: str) -> int:
        return len(text)


class TokenMeasure:
    """Counts tokens of a ``tokenizers.Tokenizer`` (the embedder's), truncation switched off."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def _starts(self, text: str) -> list[int]:
        truncation = self._tokenizer.truncation
        self._tokenizer.no_truncation()
        try:
            encoding = self._tokenizer.encode(text, add_special_tokens=False)
        finally:
            if truncation:
                self._tokenizer.enable_truncation(**truncation)
        return [start for start, _ in encoding.offsets]

    def spans(self, text: str) -> SpanLength:
        starts = self._starts(text)
        return lambda start, end: bisect_left(starts, end) - bisect_left(starts, start)

    def size(self, text: str) -> int:
        return len(self._starts(text))


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end) past surrounding whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def make_chunk(document: Document, start: int, end: int, headings: tuple[str, ...] = ()) -> Chunk:
    section = document.locate(start)
    return Chunk(
        text=document.text[start:end],
        start=start,
        end=end,
        page=section.page if section else None,
        headings=headings or (section.headings if section else ()),
    )
