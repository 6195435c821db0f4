"""The splitter role: a Document in, Chunks with char offsets out.

Sizes are measured by a ``Measure``: characters by default, or tokens of the embedder's own
tokenizer. A measure is built per text, so token counts of any span come from one encoding.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from citewell.types import MAX_CHARS_PER_TOKEN, Chunk, Document

SpanLength = Callable[[int, int], int]


class Splitter(Protocol):
    def split(self, document: Document) -> list[Chunk]: ...


class SpanSplitter(Protocol):
    """A splitter that can cut any span of a text: what the Markdown-header splitter uses
    inside sections that are too large, so structure comes first, then size or meaning."""

    chunk_size: int
    measure: Measure

    def split(self, document: Document) -> list[Chunk]: ...

    def split_span(self, text: str, start: int, end: int) -> list[tuple[int, int]]: ...


def unit_starts(measure: Measure, text: str) -> Sequence[int]:
    """Where each unit (character or token) of ``text`` starts."""
    starts = getattr(measure, "starts", None)
    return starts(text) if starts is not None else range(len(text))


class Measure(Protocol):
    """How big text is: ``spans(text)`` gives a length function over [start, end) of that text."""

    def spans(self, text: str) -> SpanLength: ...

    def size(self, text: str) -> int: ...

    def clip(self, text: str, max_tokens: int, keep_end: bool = False) -> str: ...


class CharacterMeasure:
    def spans(self, text: str) -> SpanLength:
        del text
        return lambda start, end: end - start

    def size(self, text: str) -> int:
        return len(text)

    def clip(self, text: str, max_tokens: int, keep_end: bool = False) -> str:
        return text[-max_tokens:] if keep_end else text[:max_tokens]


class ApproximateMeasure(CharacterMeasure):
    """About four characters a token: for budgets when no tokenizer is at hand."""

    def size(self, text: str) -> int:
        return max(1, len(text) // 4)

    def clip(self, text: str, max_tokens: int, keep_end: bool = False) -> str:
        return super().clip(text, max_tokens * 4, keep_end)


class TokenMeasure:
    """Counts tokens of a ``tokenizers.Tokenizer`` (the embedder's).

    It works on its own copy with truncation and padding off: switching them off on the
    shared tokenizer would let a query embedded meanwhile run untruncated.
    """

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def _starts(self, text: str) -> list[int]:
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return [start for start, _ in encoding.offsets]

    def starts(self, text: str) -> list[int]:
        return self._starts(text)

    def spans(self, text: str) -> SpanLength:
        starts = self._starts(text)
        return lambda start, end: bisect_left(starts, end) - bisect_left(starts, start)

    def size(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        """Text of token ids of this tokenizer (OpenAI-style token-id input)."""
        text: str = self._tokenizer.decode(ids)
        return text

    def clip(self, text: str, max_tokens: int, keep_end: bool = False) -> str:
        """At most ``max_tokens`` tokens of ``text``: its start, or its end. Only a bounded
        slice is ever tokenized, however long the text."""
        window = max_tokens * MAX_CHARS_PER_TOKEN
        part = text[-window:] if keep_end else text[:window]
        starts = self._starts(part)
        if len(starts) <= max_tokens:
            return part
        if keep_end:
            return part[starts[-max_tokens] :]
        return part[: starts[max_tokens]].rstrip()


class KeptTokenMeasure(TokenMeasure):
    """A TokenMeasure that remembers the sizes it counted: for prompt budgets, where every
    chat counts the RAG template, each message twice and every candidate source, and the
    same chunks come back for many questions (token counting was 45 % of an extractive
    chat's CPU time). Only short texts are kept, at most ``entries`` of them.

    A tokenizer that splits words at whitespace first (BERT's, MiniLM's) gives a text as
    many tokens as its lines together, so a text is counted line by line, each line kept:
    the template's lines are counted once, the question's each time.
    """

    def __init__(self, tokenizer: Any, entries: int = 8192) -> None:
        super().__init__(tokenizer)
        self._entries = entries
        self._sizes: dict[str, int] = {}
        self._by_line = type(self._tokenizer.pre_tokenizer).__name__ in WHITESPACE_SPLITTING

    def size(self, text: str) -> int:
        if self._by_line and len(text) <= SPLIT_CHARS and "\n" in text:
            return sum(self._kept_size(line) for line in text.split("\n"))
        return self._kept_size(text)

    def _kept_size(self, text: str) -> int:
        size = self._sizes.get(text)
        if size is not None:
            return size
        size = self._count(text)
        if len(text) <= KEPT_CHARS:
            if len(self._sizes) >= self._entries:
                self._sizes = {}  # all at once: cheaper than tracking use, and rare
            self._sizes[text] = size
        return size

    def _count(self, text: str) -> int:
        return super().size(text)


# Pre-tokenizers that cut at every whitespace, so token counts add up over lines.
WHITESPACE_SPLITTING = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
KEPT_CHARS = 4096  # longer texts are counted, not kept (a chunk with its tag is ~1-2k)
SPLIT_CHARS = 65_536  # prompts; whole documents are counted in one go, not kept line by line


def bounded_size(measure: Measure, text: str, limit: int) -> int:
    """``measure.size(text)``, or ``limit + 1`` when the text is surely over ``limit``
    (too many characters), so that huge texts are never tokenized just to be refused."""
    if len(text) > limit * MAX_CHARS_PER_TOKEN:
        return limit + 1
    return measure.size(text)


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
