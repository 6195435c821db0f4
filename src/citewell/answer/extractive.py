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


def extractive_text(query: str, passages: Sequence[str], stemmer: str) -> str:
    """The best sentences of ``passages`` (numbered 1..n in order), each quoted and followed
    by [n]."""
    from citewell.retrieval.tokenize import tokenize

    if not passages:
        return NO_MATCH
    query_terms = set(tokenize(query, stemmer))
    candidates = []  # (chunk rank, start, sentence, terms)
    for rank, text in enumerate(passages):
        for start, sentence in passage_sentences(text):
            candidates.append((rank, start, sentence, set(tokenize(sentence, stemmer))))
    df = Counter(t for *_, terms in candidates for t in terms)
    n = len(candidates)
    scored = []
    for rank, start, sentence, terms in candidates:
        overlap = sum(math.log(1 + n / df[t]) ** 2 for t in terms & query_terms)
        score = overlap / math.sqrt(len(terms) + 1) * (1 + RANK_BONUS / (rank + 1))
        scored.append((score, rank, start, sentence))
    best = _chosen(sorted(scored, key=lambda s: -s[0]))
    best.sort(key=lambda s: (s[1], s[2]))
    return " ".join(f"\u201c{sentence}\u201d [{rank + 1}]" for _, rank, _, sentence in best)


def _chosen(ranked: list[tuple[float, int, int, str]]) -> list[tuple[float, int, int, str]]:
    """The best sentences, each once (the same filler in two chunks is quoted once), none
    far weaker than the best (KEEP_SHARE)."""
    chosen: list[tuple[float, int, int, str]] = []
    seen: set[str] = set()
    for item in ranked:
        key = " ".join(item[3].casefold().split())
        if key in seen or (chosen and item[0] < KEEP_SHARE * chosen[0][0]):
            continue
        seen.add(key)
        chosen.append(item)
        if len(chosen) == MAX_SENTENCES:
            break
    return chosen


def passage_sentences(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) of a passage, whitespace collapsed. Headings are not sentences (nor
    the start of the one after them), and a passage's own bracketed numbers are dropped: in a
    quote they would read as Citewell's citations. Each row of a Markdown table is a
    sentence of its own, read with its header's names ("Part: PX-8891; Bin: B-14"); the
    header and delimiter rows are none."""
    pieces: list[tuple[int, str]] = []
    prose_start = 0
    names: list[str] = []
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
        pieces.append((row.start(), _labelled(_cells(line), names)))
    pieces += _prose_sentences(text, prose_start, len(text))
    whole = [p for p in pieces if not _title_like(p[1])]
    return whole or pieces


def _cells(row: str) -> list[str]:
    return [" ".join(cell.split()) for cell in row.strip().strip("|").split("|")]


def _labelled(cells: list[str], names: list[str]) -> str:
    """A row as "Name: value; …" when its header names each cell, else as written."""
    if len(names) != len(cells) or not all(names):
        return "| " + " | ".join(cells) + " |"
    return "; ".join(f"{name}: {cell}" for name, cell in zip(names, cells, strict=True) if cell)


def _prose_sentences(text: str, begin: int, stop: int) -> list[tuple[int, str]]:
    pieces = []
    part = text[begin:stop]
    for start, end in sentence_spans(part):
        offset = start
        for paragraph in PARAGRAPH_BREAK.split(part[start:end]):
            cleaned = BRACKETED_NUMBERS.sub("", HEADING_LINE.sub(" ", paragraph))
            sentence = " ".join(cleaned.split())
            if sentence:
                pieces.append((begin + offset, sentence))
            offset += len(paragraph)
    return pieces


def _title_like(sentence: str) -> bool:
    """A short line without closing punctuation: a title or a heading without '#'."""
    return len(sentence.split()) < 5 and not sentence.endswith((".", "!", "?", ":", ";"))
