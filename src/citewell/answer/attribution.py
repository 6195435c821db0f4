"""Citations attributed after generation: each sentence of an answer is checked against the
sources it was given, whatever model wrote it.

A sentence's support by a source is the share of its terms (BM25's, stemmed, weighted by how
rare they are among the sources) that one sentence of the source holds, or two in a row.
Where no source holds enough of its words, the embedding model may still find one that says
the same in other words. Then: a model's [n] that a supporting source backs is kept; one
that points at a source that does not support the sentence is replaced by the one that
does; a sentence that cites nothing gets the best one; a sentence no source supports is
flagged (and marked in the text, if the settings ask). Each attributed sentence points at
the span of its source that supports it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from citewell.answer.attribution_text import (
    MARKER,
    Unit,
    answer_units,
    source_spans,
    with_markers,
)
from citewell.answer.context import CitedSource
from citewell.config import Settings
from citewell.embedders import Embedder
from citewell.embedders.base import normalize
from citewell.rerankers.base import Reranker
from citewell.retrieval.tokenize import tokenize
from citewell.types import ScoredChunk, StoredChunk

# What one similarity call gets: the claims, then the candidate spans' texts; rows of
# cosines (the embedding model) or relevances (a reranker), 0..1.
Similarity = Callable[[Sequence[str], Sequence[str]], list[list[float]]]
Terms = Callable[[str], list[str]]
MIN_CLAIM_TERMS = 3  # fewer content words: a greeting, a heading, "In short:", not a claim
PAIR_MARGIN = 0.1  # what two sentences in a row must hold beyond one to be the span
SEMANTIC_CANDIDATES = 2  # best sources by wording whose spans the embedding model compares
# A sentence sharing no word with any source is about something else: no model call.
MEANING_FLOOR = 1e-6
UNSUPPORTED_MARK = " [unsupported]"
ABSTENTION = (
    "The sources found do not support an answer to this question, so I will not guess. "
    "Try rephrasing it, or choose other knowledge bases."
)


@dataclass(frozen=True)
class AttributionConfig:
    min_support: float = 0.6  # share of a sentence's weighted terms one span must hold
    min_similarity: float = 0.7  # cosine, claim to span, where the wording alone falls short
    mark_unsupported: bool = False  # write UNSUPPORTED_MARK after such sentences


@dataclass(frozen=True)
class SentenceAttribution:
    """One sentence of the final answer (``start``..``end`` in it) and what supports it."""

    start: int
    end: int
    status: str  # kept, replaced, added, unsupported or not_a_claim
    cited: tuple[int, ...]  # the numbers the model wrote
    source: int | None = None  # the supporting source's number
    support: float = 0.0  # 0..1: share of the sentence's wording, or its similarity
    by: str = ""  # "wording" or "meaning" (the embedding model)
    quote: str = ""  # the supporting span, as the source has it
    quote_start: int | None = None  # the span's offsets in the file's text, where known
    quote_end: int | None = None
    page: int | None = None

    def public(self) -> dict[str, Any]:
        return {
            "start": self.start, "end": self.end, "status": self.status,
            "cited": list(self.cited), "source": self.source,
            "support": round(self.support, 4), "by": self.by or None, "quote": self.quote,
            "quote_start": self.quote_start, "quote_end": self.quote_end, "page": self.page,
        }  # fmt: skip


@dataclass(frozen=True)
class Attribution:
    text: str  # the answer with its citations set right
    sentences: tuple[SentenceAttribution, ...]

    @property
    def claims(self) -> list[SentenceAttribution]:
        return [s for s in self.sentences if s.status != "not_a_claim"]

    @property
    def unsupported(self) -> list[SentenceAttribution]:
        return [s for s in self.sentences if s.status == "unsupported"]

    @property
    def changed(self) -> bool:
        return any(s.status in ("replaced", "added") for s in self.sentences)

    def supported_share(self) -> float | None:
        """Share of the claim sentences a source supports (None: the answer claims nothing)."""
        claims = self.claims
        return sum(s.source is not None for s in claims) / len(claims) if claims else None

    def abstains(self, below: float) -> bool:
        """Whether too little of the answer is supported to give it (``abstain_below``)."""
        share = self.supported_share()
        return share is not None and share < below

    def public(self) -> dict[str, Any]:
        claims = self.claims
        supported = sum(s.source is not None for s in claims)
        return {
            "sentences": [s.public() for s in self.sentences],
            "supported": supported,
            "unsupported": len(claims) - supported,
            "changed": self.changed,
        }


@dataclass(frozen=True)
class _Claim:
    terms: frozenset[str]  # empty: not a claim
    required: frozenset[str] = frozenset()  # terms a supporting span must hold


@dataclass(frozen=True)
class _Candidate:
    number: int
    start: int
    end: int
    terms: frozenset[str]
    source: CitedSource

    @property
    def text(self) -> str:
        return read_text(self.source)[0][self.start : self.end]


@dataclass(frozen=True)
class _Found:
    candidate: _Candidate
    support: float
    by: str


class Attributor:
    """Attribution over one answer's sources; ``similar`` is the embedding model's cosine
    (None: wording alone)."""

    def __init__(
        self,
        sources: Sequence[CitedSource],
        terms: Terms,
        config: AttributionConfig,
        similar: Similarity | None = None,
    ) -> None:
        self.terms, self.config, self.similar = terms, config, similar
        self.candidates = _candidates(sources, terms)
        df = Counter(t for c in self.candidates for t in c.terms)
        n = max(1, len(self.candidates))
        self.idf = {t: math.log(1 + n / count) for t, count in df.items()}
        self.unseen = math.log(1 + n * 2)  # a term no source has weighs most

    def attribute(self, answer: str, skip: int = 0, question: str = "") -> Attribution:
        """``answer`` with its citations set right; lines before offset ``skip`` (a note
        about the answer, not a claim) are left alone. ``question``: what was asked, which
        gives a short answer ("56", "Nadia Ferreira.") the words it answers."""
        units = answer_units(answer, skip)
        claims = [self._claim(u) for u in units]
        if question and len(units) == 1 and not claims[0].terms and not units[0].question:
            units, claims = self._short_answer(units[0], question)
        found = [self._ranked(c) if c.terms else None for c in claims]
        self._by_meaning(units, found)
        return self._written(answer, units, [c.terms for c in claims], found)

    # --- scoring ------------------------------------------------------------------------
    def _claim(self, unit: Unit) -> _Claim:
        terms = frozenset(self.terms(unit.claim))
        long_enough = len(terms) >= MIN_CLAIM_TERMS and not unit.question
        return _Claim(terms if long_enough else frozenset())

    def _short_answer(self, unit: Unit, question: str) -> tuple[list[Unit], list[_Claim]]:
        """A whole answer of a word or two is a claim with the question's words (those some
        source has: not "what" or "who"), and a span must hold the answer's own words."""
        own = frozenset(self.terms(unit.claim))
        if not own:
            return [unit], [_Claim(frozenset())]
        asked = f"{question} {unit.claim}"
        framing = frozenset(t for t in self.terms(question) if t in self.idf)  # not "what"
        claim = _Claim(own | framing, own)
        return [replace(unit, claim=asked)], [claim]

    def _support(self, claim: _Claim, held: frozenset[str]) -> float:
        if not claim.required <= held:
            return 0.0
        weights = {t: self.idf.get(t, self.unseen) for t in claim.terms}
        total = sum(weights.values())
        return sum(w for t, w in weights.items() if t in held) / total if total else 0.0

    def _ranked(self, claim: _Claim) -> list[_Found]:
        """Each source's best span (one sentence, or two in a row), best first; two in a
        row must hold clearly more (PAIR_MARGIN) to be preferred."""
        best: dict[int, tuple[float, _Found]] = {}
        for i, cand in enumerate(self.candidates):
            options = [(cand, 0.0)]
            nxt = self.candidates[i + 1] if i + 1 < len(self.candidates) else None
            if nxt is not None and nxt.number == cand.number:
                pair = replace(cand, end=nxt.end, terms=cand.terms | nxt.terms)
                options.append((pair, PAIR_MARGIN))
            for option, margin in options:
                score = self._support(claim, option.terms)
                known = best.get(cand.number)
                if known is None or score - margin > known[0]:
                    best[cand.number] = (score - margin, _Found(option, score, "wording"))
        found = [f for _, f in best.values()]
        return sorted(found, key=lambda f: (-f.support, f.candidate.number))

    def _by_meaning(self, units: list[Unit], found: list[list[_Found] | None]) -> None:
        """Where no source holds enough of a sentence's words (but one holds some), the
        embedding model compares it with its best few sources' spans, each span embedded
        once, in one call for the whole answer."""
        if self.similar is None:
            return
        weak = [
            i for i, f in enumerate(found)
            if f and MEANING_FLOOR <= f[0].support < self.config.min_support
        ]  # fmt: skip
        options = {i: (found[i] or [])[:SEMANTIC_CANDIDATES] for i in weak}
        texts = list(dict.fromkeys(f.candidate.text for i in weak for f in options[i]))
        if not texts:
            return
        rows = self.similar([units[i].claim for i in weak], texts)
        column = {text: n for n, text in enumerate(texts)}
        for row, i in zip(rows, weak, strict=True):
            meant = [
                _Found(o.candidate, row[column[o.candidate.text]], "meaning") for o in options[i]
            ]
            best = max(meant, key=lambda f: f.support)
            if best.support >= self.config.min_similarity:
                found[i] = [best, *(found[i] or [])]

    def _supports(self, f: _Found) -> bool:
        limit = self.config.min_similarity if f.by == "meaning" else self.config.min_support
        return f.support >= limit

    # --- writing ------------------------------------------------------------------------
    def _written(
        self,
        answer: str,
        units: list[Unit],
        claims: list[frozenset[str]],
        found: list[list[_Found] | None],
    ) -> Attribution:
        parts: list[str] = []
        sentences: list[SentenceAttribution] = []
        cursor = length = 0
        for unit, claim, ranked in zip(units, claims, found, strict=True):
            parts.append(answer[cursor : unit.start])
            length += unit.start - cursor
            text, attributed = self._decide(answer[unit.start : unit.end], claim, ranked)
            sentences.append(replace(attributed, start=length, end=length + len(text)))
            parts.append(text)
            length += len(text)
            cursor = unit.end
        parts.append(answer[cursor:])
        return Attribution("".join(parts), tuple(sentences))

    def _decide(
        self, text: str, claim: frozenset[str], ranked: list[_Found] | None
    ) -> tuple[str, SentenceAttribution]:
        cited = tuple(int(n) for n in MARKER.findall(text))
        if not claim or ranked is None:
            return text, SentenceAttribution(0, 0, "not_a_claim", cited)
        supporting = [f for f in ranked if self._supports(f)]
        backed = [f for f in supporting if f.candidate.number in cited]
        if backed:
            return text, _attributed("kept", cited, backed[0])
        if not supporting:
            marked = self.config.mark_unsupported and UNSUPPORTED_MARK not in text
            shown = with_markers(text, cited, UNSUPPORTED_MARK) if marked else text
            best = ranked[0] if ranked else None
            return shown, SentenceAttribution(
                0, 0, "unsupported", cited, support=best.support if best else 0.0
            )
        chosen = supporting[0]
        status = "replaced" if cited else "added"
        return with_markers(text, (chosen.candidate.number,)), _attributed(status, cited, chosen)


def _attributed(status: str, cited: tuple[int, ...], found: _Found) -> SentenceAttribution:
    cand, source = found.candidate, found.candidate.source
    base = read_text(source)[1]
    return SentenceAttribution(
        0, 0, status, cited, cand.number, found.support, found.by,
        quote=cand.text,
        quote_start=base + cand.start if base is not None else None,
        quote_end=base + cand.end if base is not None else None,
        page=source.page,
    )  # fmt: skip


def read_text(source: CitedSource) -> tuple[str, int | None]:
    """What the model read of a source (the wider window, with small-to-big) and where that
    text starts in the file's text (None: not known, e.g. a whole document's summary)."""
    if source.context and source.window_start is not None:
        return source.context, source.window_start
    return source.text, file_offset(source)


def file_offset(source: CitedSource) -> int | None:
    """Where the source's text starts in its file's text: a chunk's start, when its text is
    that span of the file (None: a whole document's text as given, or a summary)."""
    in_file = source.chunk_id is not None and source.end - source.start == len(source.text)
    return source.start if in_file else None


def _candidates(sources: Sequence[CitedSource], terms: Terms) -> list[_Candidate]:
    found = []
    for source in sources:
        text = read_text(source)[0]
        for start, end in source_spans(text):
            held = frozenset(terms(text[start:end]))
            if held:
                found.append(_Candidate(source.number, start, end, held, source))
    return found


def attributor_for(
    settings: Settings,
    sources: Sequence[CitedSource],
    embedder: Embedder | None,
    reranker: Reranker | None = None,
) -> Attributor | None:
    """The attributor the settings ask for (None: attribution is off): its meaning check
    is the reranker's when ``citation_checker`` asks for it and one is configured."""
    answering = settings.answering
    if not answering.citation_attribution:
        return None
    config = AttributionConfig(
        answering.citation_min_support,
        answering.citation_min_similarity,
        answering.citation_mark_unsupported,
    )
    stemmer = settings.retrieval.bm25_stemmer
    similar: Similarity | None = None
    if answering.citation_min_similarity > 1.0:
        similar = None  # wording alone
    elif answering.citation_checker == "reranker" and reranker is not None:
        similar = reranker_similarity(reranker)
    elif embedder is not None:
        similar = embedding_similarity(embedder)
    return Attributor(sources, lambda text: tokenize(text, stemmer), config, similar)


def embedding_similarity(embedder: Embedder) -> Similarity:
    """Cosine of each claim with each span, from one call to the embedding model (as
    queries: not kept in the document cache)."""

    def similar(claims: Sequence[str], spans: Sequence[str]) -> list[list[float]]:
        vectors = normalize(np.asarray(embedder.embed([*claims, *spans], "query")))
        return (vectors[: len(claims)] @ vectors[len(claims) :].T).tolist()  # type: ignore[no-any-return]

    return similar


def reranker_similarity(reranker: Reranker) -> Similarity:
    """The reranker's relevance (0..1) of each span to each claim: the claim is the query
    and the spans its candidates, one rerank call per claim."""

    def similar(claims: Sequence[str], spans: Sequence[str]) -> list[list[float]]:
        candidates = [
            ScoredChunk(str(n), 0.0, _span_chunk(n, text)) for n, text in enumerate(spans)
        ]
        rows = []
        for claim in claims:
            scored = reranker.rerank(claim, candidates, len(candidates))
            by_span = {c.chunk_id: c.rerank_score or 0.0 for c in scored}
            rows.append([by_span.get(str(n), 0.0) for n in range(len(spans))])
        return rows

    return similar


def _span_chunk(n: int, text: str) -> StoredChunk:
    """A source's span dressed as a chunk, so a reranker can read it."""
    return StoredChunk(str(n), "", (), n, text, 0, len(text), None, (), "", "")
