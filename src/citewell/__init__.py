"""Citewell: a self-hosted RAG server that answers from your documents and cites the passage.

Exports are resolved lazily so that importing the command line stays cheap and can set
native runtime defaults before numpy and onnxruntime load.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Answer": "citewell.types",
    "Chunk": "citewell.types",
    "Citation": "citewell.types",
    "Citewell": "citewell.app",
    "CitewellError": "citewell.errors",
    "Document": "citewell.types",
    "ScoredChunk": "citewell.types",
    "SearchMode": "citewell.types",
    "Settings": "citewell.config",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'citewell' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
