"""Rerankers by registry name (``reranker``): none (default), cross_encoder, http."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.plugins import Registry
from citewell.rerankers.base import Reranker, apply_scores
from citewell.rerankers.cross_encoder import CrossEncoderReranker
from citewell.rerankers.http import HttpReranker

__all__ = [
    "RERANKERS",
    "CrossEncoderReranker",
    "HttpReranker",
    "Reranker",
    "apply_scores",
    "build_reranker",
]


RERANKERS: Registry[Callable[[Settings], Reranker | None]] = Registry("rerankers")
RERANKERS.add("none", lambda _: None)


@RERANKERS.register("cross_encoder")
def _cross_encoder(settings: Settings) -> Reranker:
    if not settings.reranking.reranking_model:
        raise ConfigError("reranker=cross_encoder needs reranking_model: a local directory.")
    return CrossEncoderReranker(Path(settings.reranking.reranking_model))


@RERANKERS.register("http")
def _http(settings: Settings) -> Reranker:
    if not settings.reranking.reranker_url:
        raise ConfigError("reranker=http needs reranker_url, e.g. http://host:port/v1/rerank.")
    return HttpReranker(
        settings.reranking.reranker_url,
        settings.reranking.reranking_model,
        settings.reranking.reranker_api_key,
    )


def build_reranker(settings: Settings) -> Reranker | None:
    """The reranker ``reranker`` names; None for "none"."""
    return RERANKERS.get(settings.reranking.reranker)(settings)
