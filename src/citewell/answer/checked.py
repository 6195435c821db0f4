"""An answer checked against its sources, as the settings ask: each sentence attributed
(``citation_attribution``), and the reasons to answer without the model or to withhold what
it wrote (``abstain_on_unknown_names``, ``abstain_below``)."""

from __future__ import annotations

from collections.abc import Sequence

from citewell.answer.attribution import (
    Attribution,
    SentenceAttribution,
    attributor_for,
    file_offset,
)
from citewell.answer.context import CitedSource
from citewell.answer.exchange import PreparedChat
from citewell.answer.extractive import Quote
from citewell.config import Settings
from citewell.embedders import Embedder
from citewell.live_settings import SettingsInForce
from citewell.tracing import span


def attributed(
    in_force: SettingsInForce,
    embedder: Embedder | None,
    prepared: PreparedChat,
    text: str,
    skip: int = 0,
) -> Attribution | None:
    """Each sentence of ``text`` checked against the prepared sources; None when attribution
    is off or there is nothing to check."""
    if not prepared.sources or not text.strip() or prepared.task:
        return None
    with span("attribute citations") as current:
        reranker = in_force.ranking.reranker  # the server's, for citation_checker 'reranker'
        attributor = attributor_for(in_force.settings, prepared.sources, embedder, reranker)
        if attributor is None:
            return None
        asked = [m.content for m in prepared.request.messages if m.role == "user"]
        attribution = attributor.attribute(text, skip, asked[-1] if asked else "")
        current.set_attribute("unsupported", len(attribution.unsupported))
    return attribution


def abstains_early(settings: Settings, prepared: PreparedChat) -> bool:
    """The question names something no source mentions: the sources cannot answer it, and a
    model would answer about the nearest thing they do mention. Not with builtin tools,
    which may search further."""
    wanted = settings.answering.abstain_on_unknown_names
    return bool(wanted and prepared.unknown and prepared.tools is None)


def unsupported_reason(settings: Settings, attribution: Attribution | None) -> str | None:
    """'unsupported_answer' when too little of an answer is supported (abstain_below)."""
    below = settings.answering.abstain_below
    if attribution is None or not below or not attribution.abstains(below):
        return None
    return "unsupported_answer"


def quoted_attribution(
    text: str, quotes: Sequence[Quote], sources: Sequence[CitedSource], passages: Sequence[str]
) -> Attribution:
    """An extractive answer's attribution, known as it was written: each quote is kept with
    the span it was taken from (the quotes end ``text``; ``passages`` are what they were
    quoted from, a table's header before some)."""
    sentences = []
    cursor = len(text) - len(" ".join(q.written() for q in quotes))
    for quote in quotes:
        source, written = sources[quote.rank], quote.written()
        shift = len(passages[quote.rank]) - len(source.text)  # a header put before the rows
        start, end = quote.start - shift, quote.end - shift
        base = file_offset(source) if start >= 0 else None
        sentences.append(SentenceAttribution(
            cursor, cursor + len(written), "kept", (source.number,), source.number, 1.0,
            "wording", quote=passages[quote.rank][quote.start : quote.end],
            quote_start=base + start if base is not None else None,
            quote_end=base + end if base is not None else None, page=source.page,
        ))  # fmt: skip
        cursor += len(written) + 1
    return Attribution(text, tuple(sentences))
