"""Markdown-header splitting, then Open WebUI's chunk-min-size-target merge, then size limits.

The merge follows Open WebUI's documented algorithm exactly: one forward pass; a chunk is
absorbed while the *accumulated* chunk is below the target, the merge stays within the
maximum, and both come from the same document; joins use "\n\n"; the merged chunk keeps the
metadata of its first part.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from citewell.splitters.base import Measure, SpanSplitter, make_chunk, strip_span
from citewell.types import Chunk, Document

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class SourcedChunk:
    """A chunk and the document it came from: merging never crosses documents."""

    source: str
    chunk: Chunk


def header_sections(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, heading path) for each Markdown section; '#' inside code fences is text."""
    bounds: list[tuple[int, tuple[str, ...]]] = [(0, ())]
    path: list[tuple[int, str]] = []
    fence: str | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        fenced = FENCE.match(line)
        if fenced and (fence is None or fenced.group(1)[0] == fence[0]):
            fence = None if fence else fenced.group(1)
        elif fence is None and (match := HEADING.match(line.rstrip("\n"))):
            level = len(match.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, match.group(2))]
            bounds.append((offset, tuple(title for _, title in path)))
        offset += len(line)
    spans = [
        (s, bounds[i + 1][0] if i + 1 < len(bounds) else len(text), h)
        for i, (s, h) in enumerate(bounds)
    ]
    return [(s, e, h) for s, e, h in spans if text[s:e].strip()]


def merge_small_chunks(
    chunks: Sequence[SourcedChunk], min_size: int, max_size: int, measure: Measure
) -> list[SourcedChunk]:
    """Open WebUI's CHUNK_MIN_SIZE_TARGET merge (forward-only, single pass)."""
    if min_size <= 0 or not chunks:
        return list(chunks)
    merged: list[SourcedChunk] = []
    current = chunks[0]
    for following in chunks[1:]:
        joined = current.chunk.text + "\n\n" + following.chunk.text
        if (
            measure.size(current.chunk.text) < min_size
            and measure.size(joined) <= max_size
            and following.source == current.source
        ):
            current = SourcedChunk(
                current.source, replace(current.chunk, text=joined, end=following.chunk.end)
            )
        else:
            merged.append(current)
            current = following
    merged.append(current)
    return merged


class MarkdownHeaderSplitter:
    """Sections by heading; small ones merged forward; large ones split by ``inner`` (by
    size, or by meaning for the semantic splitters)."""

    def __init__(self, inner: SpanSplitter, chunk_min_size_target: int) -> None:
        self.inner = inner
        self.min_size = chunk_min_size_target

    def split(self, document: Document) -> list[Chunk]:
        sections = []
        for start, end, headings in header_sections(document.text):
            s, e = strip_span(document.text, start, end)
            sections.append(SourcedChunk(document.name, make_chunk(document, s, e, headings)))
        merged = merge_small_chunks(
            sections, self.min_size, self.inner.chunk_size, self.inner.measure
        )
        return [piece for item in merged for piece in self._fit(document, item.chunk)]

    def _fit(self, document: Document, chunk: Chunk) -> list[Chunk]:
        if self.inner.measure.size(chunk.text) <= self.inner.chunk_size:
            return [chunk]
        spans = self.inner.split_span(document.text, chunk.start, chunk.end)
        return [make_chunk(document, s, e, chunk.headings) for s, e in spans]
