"""Rerankers by registry name (``reranker``): none (default), cross_encoder, http; plug-ins
through the entry point group ``citewell.rerankers``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from citewell.config import RerankingSection, Settings
from citewell.errors import ConfigError
from citewell.plugins import Registry
from citewell.rerankers.base import Reranker
from citewell.rerankers.cross_encoder import CrossEncoderReranker
from citewell.rerankers.http import HttpReranker

RERANKERS: Registry[Callable[[RerankingSection], Reranker | None]] = Registry("rerankers")
RERANKERS.add("none", lambda _: None)


@RERANKERS.register("cross_encoder")
def _cross_encoder(section: RerankingSection) -> Reranker:
    if not section.reranking_model:
        raise ConfigError("reranker=cross_encoder needs reranking_model: a local directory.")
    return CrossEncoderReranker(Path(section.reranking_model))


@RERANKERS.register("http")
def _http(section: RerankingSection) -> Reranker:
    if not section.reranker_url:
        raise ConfigError("reranker=http needs reranker_url, e.g. http://host:port/v1/rerank.")
    return HttpReranker(
        section.reranker_url,
        section.reranking_model,
        section.reranker_api_key,
    )


def build_reranker(settings: Settings) -> Reranker | None:
    """The reranker ``reranker`` names; None for "none"."""
    return RERANKERS.get(settings.reranking.reranker)(settings.reranking)
