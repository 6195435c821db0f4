"""The one place that says which value is in force for a request: the request's own, else
its model preset's, else the knowledge bases', else the settings in force (an admin's
run-time changes over the start-up settings). Answers and searches both ask here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from citewell.config.settings import Settings
from citewell.types import SearchMode


@dataclass(frozen=True)
class Choice:
    """What one layer (a request, a model preset, the KBs searched) sets; None leaves the
    value to the next layer. Each field overrides the setting named beside it."""

    top_k: int | None = None  # top_k
    mode: SearchMode | None = None  # hybrid_search (hybrid or vector; bm25 only here)
    relevance_threshold: float | None = None  # relevance_threshold
    full_context: bool | None = None  # rag_full_context


@dataclass(frozen=True)
class Resolved:
    """The values in force for one request."""

    top_k: int
    mode: SearchMode
    # None: the settings' own threshold, which the ranking in force applies
    relevance_threshold: float | None
    full_context: bool


def merged(*layers: Choice) -> Choice:
    """One layer with each value from the first of ``layers`` (most specific first) that
    sets it: what a request asks for, before the KBs searched and the settings are known."""

    def first(name: str) -> Any:
        return next((getattr(c, name) for c in layers if getattr(c, name) is not None), None)

    return Choice(
        top_k=first("top_k"),
        mode=first("mode"),
        relevance_threshold=first("relevance_threshold"),
        full_context=first("full_context"),
    )


def resolve(settings: Settings, *layers: Choice) -> Resolved:
    """Each value from the first of ``layers`` (most specific first) that sets it, else
    from ``settings``."""
    chosen = merged(*layers)
    mode = chosen.mode
    if mode is None:
        mode = SearchMode.HYBRID if settings.retrieval.hybrid_search else SearchMode.VECTOR
    full_context = chosen.full_context
    return Resolved(
        top_k=chosen.top_k or settings.retrieval.top_k,
        mode=mode,
        relevance_threshold=chosen.relevance_threshold,
        full_context=settings.answering.rag_full_context if full_context is None else full_context,
    )
