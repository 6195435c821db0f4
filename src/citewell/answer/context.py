"""Numbered sources and the context string, packed to a token budget."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from citewell.types import ScoredChunk, table_heading

TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class CitedSource:
    """One numbered source given to the LLM and cited as [n]: a chunk, or a whole document in
    full-context mode. (Not a source kind: those bring files in, ``citewell.sources``.)"""

    number: int
    text: str
    file_id: str
    file_name: str
    mime_type: str
    page: int | None
    start: int
    end: int
    score: float
    chunk_id: str | None
    kb_id: str | None
    url: str = ""  # the page or video, for fetched sources
    # Small-to-big: the wider text the model reads, and where it lies in the file's text.
    # The citation (text, start, end) stays the retrieved span.
    context: str = ""
    window_start: int | None = None
    window_end: int | None = None
    # What the model reads before the passage: the caption and header rows of the table
    # whose later rows the chunk holds (splitters/tables.py).
    lead: str = ""

    def plain(self) -> CitedSource:
        """This source without its wider window."""
        return replace(self, context="", window_start=None, window_end=None)


def source_block(source: CitedSource) -> str:
    name = html.escape(source.file_name, quote=True)
    body = source.context or source.text
    if source.lead and source.lead.splitlines()[-2] not in body:  # its header row
        body = f"{source.lead}\n{body}"
    return f'<source id="{source.number}" name="{name}">{body}</source>'


def context_string(sources: Sequence[CitedSource]) -> str:
    return "\n".join(source_block(s) for s in sources)


def block_tokens(source: CitedSource, count: TokenCounter) -> int:
    """Tokens of the source's block, counted as if it were number 0: the same text for
    every number it may get, so a counter that keeps sizes counts a chunk once."""
    return count(source_block(replace(source, number=0)))


def context_tokens(sources: Sequence[CitedSource], count: TokenCounter) -> int:
    """Tokens of ``context_string(sources)`` (exact for tokenizers that split at whitespace;
    a number's digits may differ by a token elsewhere)."""
    return sum(block_tokens(s, count) for s in sources)


def pack(candidates: Sequence[CitedSource], budget: int, count: TokenCounter) -> list[CitedSource]:
    """The best-ranked sources that fit the budget, renumbered 1..n in rank order. A source
    with a wider window whose window does not fit, or overlaps one already given, is given
    as its chunk alone."""
    kept: list[CitedSource] = []
    used = 0
    for candidate in candidates:
        choices = [candidate, candidate.plain()] if candidate.context else [candidate]
        for source in choices:
            cost = block_tokens(source, count) + 1
            if used + cost > budget or _overlaps(source, kept):
                continue  # a smaller, lower-ranked source may still fit
            used += cost
            kept.append(source)
            break
    return [replace(s, number=i) for i, s in enumerate(kept, start=1)]


def _overlaps(source: CitedSource, kept: Sequence[CitedSource]) -> bool:
    if source.window_start is None or source.window_end is None:
        return False
    return any(
        k.file_id == source.file_id
        and (k.window_start if k.window_start is not None else k.start) < source.window_end
        and source.window_start < (k.window_end if k.window_end is not None else k.end)
        for k in kept
    )


def chunk_source(result: ScoredChunk, mime_type: str, url: str = "") -> CitedSource:
    chunk = result.chunk
    score = result.rerank_score if result.rerank_score is not None else result.score
    return CitedSource(
        0,
        chunk.text,
        chunk.file_id,
        chunk.file_name,
        mime_type,
        chunk.page,
        chunk.start,
        chunk.end,
        score,
        chunk.id,
        result.kb_id,
        url,
        lead=table_heading(chunk.headings),
    )


def source_public(source: CitedSource) -> dict[str, Any]:
    """A source as the API and `citewell ask --json` show it (seed 004's shape, extended)."""
    short = source.file_name.rsplit(".", 1)[-1].lower() if "." in source.file_name else ""
    return {
        "id": source.number,
        "index": source.number - 1,
        "content": source.text,
        "metadata": {
            "file_id": source.file_id,
            "name": source.file_name,
            "source": source.url or source.file_name,
            "url": source.url,
            "page": source.page,
            "start": source.start,
            "end": source.end,
            "score": round(source.score, 6),
            "chunk_id": source.chunk_id,
            "knowledge_base_id": source.kb_id,
            **(
                {"context_start": source.window_start, "context_end": source.window_end}
                if source.window_start is not None
                else {}
            ),
        },
        "file": {"id": source.file_id, "name": source.file_name, "type": short},
    }
