"""The text side of attribution: an answer cut into sentences (each with the [n] markers
that follow it), a source cut into spans (sentences, and table rows), and a sentence's
markers rewritten."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citewell.splitters.semantic import sentence_spans
from citewell.types import TABLE_DELIMITER

MARKER = re.compile(r"\[(\d{1,3})\]")
# A sentence ends at . ! ? (closing quotes and brackets, then any [n] after it), before a
# space or the end of the line; a decimal point or "v1.2" is no end.
SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)]*(?:[ \t]*\[\d{1,3}\])*(?=\s|$)")
LINE_LEAD = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d{1,3}[.)]\s+|>\s*)*")
TRAILER = re.compile(r"(?:[.!?…:;,]+[\"'”’)]*)?\s*$")
MARKERS_BEFORE = re.compile(r"[ \t]*\[\d{1,3}\]")
# Lines that are spans of their own: table rows and headings.
OWN_LINE = re.compile(r"^[ \t]*\|.*\|[ \t]*$|^[ \t]{0,3}#{1,6}[ \t].*$", re.M)
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Unit:
    """A sentence of an answer: ``start``..``end`` (its markers included) and its words."""

    start: int
    end: int
    claim: str  # without markers, list bullets or heading marks
    question: bool


def answer_units(answer: str, skip: int = 0) -> list[Unit]:
    """The sentences of ``answer`` from offset ``skip`` on, line by line."""
    units: list[Unit] = []
    offset = 0
    for line in answer.splitlines(keepends=True):
        begin = offset
        offset += len(line)
        if begin < skip or not line.strip():
            continue
        units += _line_units(answer, begin, begin + len(line.rstrip("\r\n")))
    return units


def _line_units(answer: str, begin: int, stop: int) -> list[Unit]:
    line = answer[begin:stop]
    units, start = [], 0
    ends = [m.end() for m in SENTENCE_END.finditer(line)]
    if not ends or ends[-1] < len(line.rstrip()):
        ends.append(len(line.rstrip()))
    for end in ends:
        piece = line[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            units.append(_unit(answer, begin + start + lead, begin + end))
        start = end
    return units


def _unit(answer: str, start: int, end: int) -> Unit:
    text = answer[start:end]
    claim = " ".join(MARKERS_BEFORE.sub("", LINE_LEAD.sub("", text)).split())
    return Unit(start, end, claim, claim.endswith("?"))


def with_markers(text: str, numbers: Sequence[int], suffix: str = "") -> str:
    """``text`` with its [n] markers replaced by ``numbers`` (and ``suffix``), placed before
    its closing punctuation: "Leave lasts 16 weeks [2]."."""
    bare = MARKERS_BEFORE.sub("", text)
    trailer = TRAILER.search(bare)
    cut = trailer.start() if trailer else len(bare)
    written = "".join(f" [{n}]" for n in numbers) + suffix
    return bare[:cut] + written + bare[cut:]


def source_spans(text: str) -> list[tuple[int, int]]:
    """Sentences, table rows and headings of a source, as offsets into its text (a table's
    delimiter row is none)."""
    spans: list[tuple[int, int]] = []
    prose = 0
    for row in OWN_LINE.finditer(text):
        spans += _prose_spans(text, prose, row.start())
        if not TABLE_DELIMITER.match(row.group()):
            spans.append(_trimmed(text, row.start(), row.end()))
        prose = row.end()
    spans += _prose_spans(text, prose, len(text))
    return [s for s in spans if s[1] > s[0]]


def _prose_spans(text: str, begin: int, stop: int) -> list[tuple[int, int]]:
    spans = []
    part = text[begin:stop]
    cursor = 0
    for paragraph in PARAGRAPH_BREAK.split(part):
        at = part.index(paragraph, cursor)
        cursor = at + len(paragraph)
        for start, end in sentence_spans(paragraph):
            spans.append(_trimmed(text, begin + at + start, begin + at + end))
    return spans


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), end - (len(piece) - len(piece.rstrip()))
