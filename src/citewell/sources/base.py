"""What a source kind is (``Source``), what it is asked (``SourceRequest``) and what it may
use (``SourceContext``): the surface a plug-in's source implements."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from citewell.config import Settings
from citewell.sources.items import SourceItem
from citewell.sources.web import WebReader


@dataclass(frozen=True)
class SourceRequest:
    """What to bring in: ``target`` is what the kind reads (a path, URL, query or name);
    ``data`` the bytes handed over (upload, text); ``options`` kind-specific strings."""

    target: str
    data: bytes = b""
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SourceContext:
    """What a source may use: the settings and the web (fetcher, YouTube, web search)."""

    settings: Settings
    web: WebReader


class Source(Protocol):
    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        """The items the request names, each read when the ingestor gets to it. Raises a
        CitewellError (InvalidInput, FetchError, …) when the request cannot be served."""
        ...
