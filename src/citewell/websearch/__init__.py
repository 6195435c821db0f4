"""Web search providers: the protocol, the built-ins and the registry (``registry.py``)."""

from __future__ import annotations

from citewell.websearch.base import WebResult, WebSearch
from citewell.websearch.registry import PROVIDERS, WEB_SEARCH, WEB_SEARCHES, build_web_search

__all__ = [
    "PROVIDERS",
    "WEB_SEARCH",
    "WEB_SEARCHES",
    "WebResult",
    "WebSearch",
    "build_web_search",
]
