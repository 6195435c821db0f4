"""Citewell: a self-hosted RAG server that answers from your documents and cites the passage.

Exports are resolved lazily so that importing the command line stays cheap and can set
native runtime defaults before numpy and onnxruntime load.
"""

from __future__ import annotations

from citewell.lazy_exports import lazy_exports

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

__getattr__ = lazy_exports(__name__, _EXPORTS)
