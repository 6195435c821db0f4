"""Plain data passed between the components. Frozen where nothing should change them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

EmbedKind = Literal["query", "document"]

# No tokenizer in use makes tokens this long on average, outside of adversarial input: a text
# longer than this many characters per token allowed is over the limit without counting
# (splitters, the embedders' input bound, chat limits, the HTTP body limit).
MAX_CHARS_PER_TOKEN = 10


# A Markdown table's delimiter row. A chunk of a table's later rows carries the table's
# caption and header rows as its last heading (splitters/tables.py); this finds it there.
TABLE_DELIMITER = re.compile(r"^[ \t]*\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*$", re.MULTILINE)


def table_heading(headings: tuple[str, ...]) -> str:
    """The table header a chunk of table rows carries, or ""."""
    return headings[-1] if headings and TABLE_DELIMITER.search(headings[-1]) else ""


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    VECTOR = "vector"
    BM25 = "bm25"


# Where a line of a page's text sits: its span in the document's text, then its left, top,
# right and bottom edges as shares of the page's width and height (from the top-left).
PageBox = tuple[int, int, float, float, float, float]


@dataclass(frozen=True)
class Section:
    """A span of a document's text that shares a page and a heading path; for a PDF page,
    the boxes of its lines and the running lines left out of its text."""

    start: int
    end: int
    page: int | None = None
    headings: tuple[str, ...] = ()
    boxes: tuple[PageBox, ...] = ()
    running: tuple[str, ...] = ()  # a PDF page's running headers and footers, not in the text


@dataclass(frozen=True)
class Document:
    """Text extracted from one source, with where its pages and headings lie."""

    text: str
    name: str
    mime_type: str
    sections: tuple[Section, ...] = ()
    title: str | None = None

    def locate(self, offset: int) -> Section | None:
        """The section that contains ``offset``, if the loader recorded any."""
        for section in self.sections:
            if section.start <= offset < section.end:
                return section
        return self.sections[-1] if self.sections and offset >= self.sections[-1].end else None


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: its text and where it came from (char offsets into the text)."""

    text: str
    start: int
    end: int
    page: int | None = None
    headings: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as the chunk store holds it."""

    id: str
    file_id: str
    kb_ids: tuple[str, ...]
    index: int
    text: str
    start: int
    end: int
    page: int | None
    headings: tuple[str, ...]
    file_name: str
    terms: str
    vector: tuple[float, ...] | None = None


@dataclass(frozen=True)
class ChunkFilter:
    """Which chunks a search or delete may touch. ``None`` means no restriction on that field."""

    kb_ids: tuple[str, ...] | None = None
    file_ids: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Hit:
    """One result of a single retriever: a chunk id, its score and its rank (0-based)."""

    chunk_id: str
    score: float
    rank: int


@dataclass
class ScoredChunk:
    """A retrieved chunk with the score of every stage that saw it.

    ``chunk`` is filled in once the retriever has read the rows it keeps.
    """

    chunk_id: str
    score: float
    chunk: StoredChunk = None  # type: ignore[assignment]
    vector_score: float | None = None
    vector_rank: int | None = None
    bm25_score: float | None = None
    bm25_rank: int | None = None
    rerank_score: float | None = None
    sentence_score: float | None = None  # its best sentence pair's (``sentence_vectors``)
    kb_id: str | None = None
    url: str = ""  # where the file came from, as its link in ``kb_id`` says
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Citation:
    """A numbered source of an answer: ``[n]`` in the text refers to ``number``."""

    number: int
    chunk_id: str
    file_id: str
    file_name: str
    page: int | None
    start: int
    end: int
    score: float
    text: str


@dataclass(frozen=True)
class Answer:
    text: str
    citations: tuple[Citation, ...]
    extractive: bool


@dataclass(frozen=True)
class IngestReport:
    files_seen: int = 0
    files_indexed: int = 0
    files_linked: int = 0
    files_unchanged: int = 0
    files_failed: int = 0
    chunks_stored: int = 0
    chunks_embedded: int = 0  # texts the model embedded (sentence pairs too), not cached
    errors: tuple[str, ...] = ()
    files_left: int = 0  # the last items, not begun: another writer waited (yield_to_waiters)
