"""Rerankers: the protocol, the built-ins and the registry (``registry.py``)."""

from __future__ import annotations

from citewell.rerankers.base import Reranker, apply_scores
from citewell.rerankers.cross_encoder import CrossEncoderReranker
from citewell.rerankers.http import HttpReranker
from citewell.rerankers.registry import RERANKERS, build_reranker

__all__ = [
    "RERANKERS",
    "CrossEncoderReranker",
    "HttpReranker",
    "Reranker",
    "apply_scores",
    "build_reranker",
]
