"""Rerankers by registry name: none (default), cross_encoder, http."""

from __future__ import annotations

from pathlib import Path

from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.rerankers.base import Reranker, apply_scores
from citewell.rerankers.cross_encoder import CrossEncoderReranker
from citewell.rerankers.http import HttpReranker

__all__ = ["CrossEncoderReranker", "HttpReranker", "Reranker", "apply_scores", "build_reranker"]


def build_reranker(settings: Settings) -> Reranker | None:
    if settings.reranker == "none":
        return None
    if settings.reranker == "cross_encoder":
        if not settings.reranking_model:
            raise ConfigError("reranker=cross_encoder needs reranking_model: a local directory.")
        return CrossEncoderReranker(Path(settings.reranking_model))
    if not settings.reranker_url:
        raise ConfigError("reranker=http needs reranker_url, e.g. http://host:port/v1/rerank.")
    return HttpReranker(settings.reranker_url, settings.reranking_model, settings.reranker_api_key)
