"""Recursive splitting on a hierarchy of separators, merged back up to the size limit.

Works on spans of the original text, so every chunk knows its exact char offsets.
"""

from __future__ import annotations

from citewell.splitters.base import CharacterMeasure, Measure, SpanLength, make_chunk, strip_span
from citewell.splitters.tables import find_tables, table_atoms
from citewell.types import Chunk, Document

SEPARATORS = ("\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ", "")

Span = tuple[int, int]


class RecursiveSplitter:
    """Paragraphs, then lines, sentences, clauses, words, characters: the coarsest that fits."""

    def __init__(
        self,
        chunk_size: int,
        chunk_overlap: int = 0,
        measure: Measure | None = None,
        separators: tuple[str, ...] = SEPARATORS,
    ) -> None:
        if not 0 <= chunk_overlap < chunk_size:
            raise ValueError("chunk_overlap must be at least 0 and smaller than chunk_size")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.measure = measure or CharacterMeasure()
        self.separators = separators

    def split(self, document: Document) -> list[Chunk]:
        return [
            make_chunk(document, s, e)
            for s, e in self.split_span(document.text, 0, len(document.text))
        ]

    def split_span(self, text: str, start: int, end: int) -> list[Span]:
        """Chunk spans covering text[start:end], stripped of surrounding whitespace;
        Markdown tables cut only between rows (splitters/tables.py)."""
        length = self.measure.spans(text)
        atoms: list[Span] = []
        position = start
        for table in find_tables(text, start, end):
            pieces = table_atoms(text, table, self.chunk_size, length)
            if pieces[0][0] > position:
                atoms += self._atoms(text, position, pieces[0][0], self.separators, length)
            for s, e in pieces:
                atoms += self._atoms(text, s, e, self.separators, length)
            position = table.end
        if position < end:
            atoms += self._atoms(text, position, end, self.separators, length)
        return [span for span in self._merge(text, atoms, length) if span[0] < span[1]]

    def _atoms(
        self, text: str, start: int, end: int, separators: tuple[str, ...], length: SpanLength
    ) -> list[Span]:
        if length(start, end) <= self.chunk_size:
            return [(start, end)]
        sep, *finer = separators
        if not sep:
            return self._hard_cut(start, end, length)
        pieces = _split_keeping(text, start, end, sep)
        if len(pieces) == 1:
            return self._atoms(text, start, end, tuple(finer), length)
        atoms: list[Span] = []
        for s, e in pieces:
            atoms.extend(
                self._atoms(text, s, e, tuple(finer), length)
                if length(s, e) > self.chunk_size
                else [(s, e)]
            )
        return atoms

    def _hard_cut(self, start: int, end: int, length: SpanLength) -> list[Span]:
        """No separator left: cut into pieces of at most chunk_size."""
        cuts, s = [], start
        while s < end:
            e = s + 1
            step = max(1, self.chunk_size)
            while e < end and length(s, min(end, e + step)) <= self.chunk_size:
                e = min(end, e + step)
            while e < end and length(s, e + 1) <= self.chunk_size:
                e += 1
            cuts.append((s, e))
            s = e
        return cuts

    def _merge(self, text: str, atoms: list[Span], length: SpanLength) -> list[Span]:
        chunks: list[Span] = []
        current: list[Span] = []
        for atom in atoms:
            if current and length(current[0][0], atom[1]) > self.chunk_size:
                chunks.append(strip_span(text, current[0][0], current[-1][1]))
                # Keep a tail of the previous chunk as overlap, if the new atom still fits.
                while current and (
                    length(current[0][0], current[-1][1]) > self.chunk_overlap
                    or length(current[0][0], atom[1]) > self.chunk_size
                ):
                    current.pop(0)
            current.append(atom)
        if current:
            chunks.append(strip_span(text, current[0][0], current[-1][1]))
        return chunks


def _split_keeping(text: str, start: int, end: int, sep: str) -> list[Span]:
    """Spans of text[start:end] cut after each occurrence of ``sep`` (the separator stays left)."""
    pieces, s = [], start
    while True:
        found = text.find(sep, s, end)
        if found < 0:
            break
        cut = found + len(sep)
        if cut > s:
            pieces.append((s, cut))
        s = cut
    if s < end:
        pieces.append((s, end))
    return pieces
