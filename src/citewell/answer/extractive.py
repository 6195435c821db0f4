"""The answer when no LLM is configured: the best-matching sentences, each cited.

Sentences of the top chunks are scored by the question's terms they hold, each weighted by
how rare it is among the retrieved sentences (squared, so a part code or a name outweighs
the words every sentence shares), with a small bonus for better-ranked chunks. A table row is
one sentence, read with its header ("Part: PX-8891; Bin: B-14"). The same sentence is never
quoted twice, and sentences far weaker than the best are left out; the rest (up to three)
are returned in reading order, each followed by ``[n]``, the number of its source chunk.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from citewell.splitters.semantic import sentence_spans
from citewell.types import TABLE_DELIMITER, Answer, Citation, ScoredChunk, table_heading

MAX_SENTENCES = 3
RANK_BONUS = 0.2  # the top chunk's sentences count this much more, the next half that
KEEP_SHARE = 0.35  # sentences scoring under this share of the best one are left out
HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t].*$", re.M)
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.M)
BRACKETED_NUMBERS = re.compile(r"[ \t]*\[\d+(?:[ \t]*[,\u2013-][ \t]*\d+)*\]")


def citations_for(results: Sequence[ScoredChunk]) -> tuple[Citation, ...]:
    """Number sources per chunk, 1..n, in rank order."""
    return tuple(
        Citation(
            number=i,
            chunk_id=r.chunk.id,
            file_id=r.chunk.file_id,
            file_name=r.chunk.file_name,
            page=r.chunk.page,
            start=r.chunk.start,
            end=r.chunk.end,
            score=r.rerank_score if r.rerank_score is not None else r.score,
            text=r.chunk.text,
        )
        for i, r in enumerate(results, start=1)
    )


NO_MATCH = "No passage in the selected knowledge bases matches the question."


def extractive_answer(query: str, results: Sequence[ScoredChunk], stemmer: str) -> Answer:
    citations = citations_for(results)
    if not results:
        return Answer(NO_MATCH, citations, extractive=True)
    passages = [with_header(r.chunk.text, table_heading(r.chunk.headings)) for r in results]
    text = extractive_text(query, passages, stemmer)
    return Answer(text=text, citations=citations, extractive=True)


def with_header(text: str, header: str) -> str:
    """A chunk of a table's later rows, with the header it carries apart (if any)."""
    return f"{header}\n{text}" if header and header not in text else text


@dataclass(frozen=True)
class Quote:
    """A sentence quoted from passage ``rank`` (0-based), at ``start``..``end`` in it."""

    rank: int
    start: int
    end: int
    sentence: str  # as quoted: whitespace collapsed, a table row with its header's names
    score: float = 0.0

    def written(self) -> str:
        return f"\u201c{self.sentence}\u201d [{self.rank + 1}]"


def extractive_text(query: str, passages: Sequence[str], stemmer: str) -> str:
    """The best sentences of ``passages`` (numbered 1..n in order), each quoted and followed
    by [n]."""
    quotes = extractive_quotes(query, passages, stemmer)
    return " ".join(q.written() for q in quotes) if quotes else NO_MATCH


def extractive_quotes(query: str, passages: Sequence[str], stemmer: str) -> list[Quote]:
    """The quotes of the extractive answer, in reading order."""
    from citewell.retrieval.tokenize import tokenize

    query_terms = set(tokenize(query, stemmer))
    candidates = []  # (quote, terms)
    for rank, text in enumerate(passages):
        for start, end, sentence in passage_pieces(text):
            quote = Quote(rank, start, end, sentence)
            candidates.append((quote, set(tokenize(sentence, stemmer))))
    df = Counter(t for _, terms in candidates for t in terms)
    n = len(candidates)
    scored = []
    for quote, terms in candidates:
        overlap = sum(math.log(1 + n / df[t]) ** 2 for t in terms & query_terms)
        score = overlap / math.sqrt(len(terms) + 1) * (1 + RANK_BONUS / (quote.rank + 1))
        scored.append(replace(quote, score=score))
    best = _chosen(sorted(scored, key=lambda q: -q.score))
    return sorted(best, key=lambda q: (q.rank, q.start))


def _chosen(ranked: list[Quote]) -> list[Quote]:
    """The best sentences, each once (the same filler in two chunks is quoted once), none
    far weaker than the best (KEEP_SHARE)."""
    chosen: list[Quote] = []
    seen: set[str] = set()
    for quote in ranked:
        key = " ".join(quote.sentence.casefold().split())
        if key in seen or (chosen and quote.score < KEEP_SHARE * chosen[0].score):
            continue
        seen.add(key)
        chosen.append(quote)
        if len(chosen) == MAX_SENTENCES:
            break
    return chosen


def passage_sentences(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) of a passage (``passage_pieces`` without their ends)."""
    return [(start, sentence) for start, _, sentence in passage_pieces(text)]


def passage_pieces(text: str) -> list[tuple[int, int, str]]:
    """(start, end, sentence) of a passage, whitespace collapsed. Headings are not sentences (nor
    the start of the one after them), and a passage's own bracketed numbers are dropped: in a
    quote they would read as Citewell's citations. Each row of a Markdown table is a
    sentence of its own, read with its header's names ("Part: PX-8891; Bin: B-14"); the
    header and delimiter rows are none."""
    pieces: list[tuple[int, int, str]] = []
    prose_start = 0
    names: list[str] = []
    rows_at: set[int] = set()  # rows are never title-like lines
    rows = list(TABLE_ROW.finditer(text))
    for i, row in enumerate(rows):
        pieces += _prose_sentences(text, prose_start, row.start())
        prose_start = row.end()
        line = row.group()
        if TABLE_DELIMITER.match(line):
            continue
        following = rows[i + 1].group() if i + 1 < len(rows) else ""
        if TABLE_DELIMITER.match(following):
            names = _cells(line)  # a header row: the names of the rows after it
            continue
        pieces.append((row.start(), row.end(), _labelled(_cells(line), names)))
        rows_at.add(row.start())
    pieces += _prose_sentences(text, prose_start, len(text))
    whole = [p for p in pieces if p[0] in rows_at or not _title_like(p[2])]
    return whole or pieces


def _cells(row: str) -> list[str]:
    return [" ".join(cell.split()) for cell in row.strip().strip("|").split("|")]


def _labelled(cells: list[str], names: list[str]) -> str:
    """A row as "Name: value; …" when its header names each cell, else as written."""
    if len(names) != len(cells) or not all(names):
        return "| " + " | ".join(cells) + " |"
    return "; ".join(f"{name}: {cell}" for name, cell in zip(names, cells, strict=True) if cell)


def _prose_sentences(text: str, begin: int, stop: int) -> list[tuple[int, int, str]]:
    """(start, end, sentence) of the prose in ``text[begin:stop]``; a sentence that runs
    over a paragraph break is two."""
    pieces = []
    part = text[begin:stop]
    for start, end in sentence_spans(part):
        cursor = start
        breaks = [(m.start(), m.end()) for m in PARAGRAPH_BREAK.finditer(part, start, end)]
        for piece_end, next_start in [*breaks, (end, end)]:
            paragraph = part[cursor:piece_end]
            cleaned = BRACKETED_NUMBERS.sub("", HEADING_LINE.sub(" ", paragraph))
            sentence = " ".join(cleaned.split())
            if sentence:
                lead = len(paragraph) - len(paragraph.lstrip())
                at = begin + cursor
                pieces.append((at + lead, at + len(paragraph.rstrip()), sentence))
            cursor = next_start
    return pieces


def _title_like(sentence: str) -> bool:
    """A short line without closing punctuation: a title or a heading without '#'."""
    return len(sentence.split()) < 5 and not sentence.endswith((".", "!", "?", ":", ";"))
