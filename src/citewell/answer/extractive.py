"""The answer when no LLM is configured: the best-matching sentences, each cited.

Sentences of the top chunks are scored by the query terms they contain (IDF-weighted within
the retrieved set) with a small bonus for better-ranked chunks; the best few are returned in
reading order, each followed by ``[n]``, the number of its source chunk.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from citewell.splitters.semantic import sentence_spans
from citewell.types import TABLE_DELIMITER, Answer, Citation, ScoredChunk

MAX_SENTENCES = 3
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
    text = extractive_text(query, [r.chunk.text for r in results], stemmer)
    return Answer(text=text, citations=citations, extractive=True)


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
        overlap = sum(math.log(1 + n / df[t]) for t in terms & query_terms)
        score = overlap / math.sqrt(len(terms) + 1) + 0.1 / (rank + 1)
        scored.append((score, rank, start, sentence))
    best = sorted(scored, key=lambda s: -s[0])[:MAX_SENTENCES]
    best.sort(key=lambda s: (s[1], s[2]))
    return " ".join(f"\u201c{sentence}\u201d [{rank + 1}]" for _, rank, _, sentence in best)


def passage_sentences(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) of a passage, whitespace collapsed. Headings are not sentences (nor
    the start of the one after them), and a passage's own bracketed numbers are dropped: in a
    quote they would read as Citewell's citations. Each row of a Markdown table is a
    sentence of its own (its delimiter row none)."""
    pieces: list[tuple[int, str]] = []
    prose_start = 0
    for row in TABLE_ROW.finditer(text):
        pieces += _prose_sentences(text, prose_start, row.start())
        if not TABLE_DELIMITER.match(row.group()):
            pieces.append((row.start(), " ".join(row.group().split())))
        prose_start = row.end()
    pieces += _prose_sentences(text, prose_start, len(text))
    whole = [p for p in pieces if not _title_like(p[1])]
    return whole or pieces


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
