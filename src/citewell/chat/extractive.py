"""The answer when no LLM is configured: the best-matching sentences, each cited.

Sentences of the top chunks are scored by the query terms they contain (IDF-weighted within
the retrieved set) with a small bonus for better-ranked chunks; the best few are returned in
reading order, each followed by ``[n]``, the number of its source chunk.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from citewell.splitters.semantic import sentence_spans
from citewell.types import Answer, Citation, ScoredChunk

MAX_SENTENCES = 3


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
    """The best sentences of ``passages`` (numbered 1..n in order), each followed by [n]."""
    from citewell.retrieval.tokenize import tokenize

    if not passages:
        return NO_MATCH
    query_terms = set(tokenize(query, stemmer))
    candidates = []  # (chunk rank, start, sentence, terms)
    sentence_terms = []
    for rank, text in enumerate(passages):
        for start, end in sentence_spans(text):
            sentence = " ".join(text[start:end].split())
            terms = set(tokenize(sentence, stemmer))
            sentence_terms.append(terms)
            candidates.append((rank, start, sentence, terms))
    df = Counter(t for terms in sentence_terms for t in terms)
    n = len(sentence_terms)
    scored = []
    for rank, start, sentence, terms in candidates:
        overlap = sum(math.log(1 + n / df[t]) for t in terms & query_terms)
        score = overlap / math.sqrt(len(terms) + 1) + 0.1 / (rank + 1)
        scored.append((score, rank, start, sentence))
    best = sorted(scored, key=lambda s: -s[0])[:MAX_SENTENCES]
    best.sort(key=lambda s: (s[1], s[2]))
    return " ".join(f"{sentence} [{rank + 1}]" for _, rank, _, sentence in best)
