"""The web search role: a query in, result links out. One small class per provider."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from citewell.errors import WebSearchError
from citewell.tracing.client import traced


@dataclass(frozen=True)
class WebResult:
    url: str
    title: str
    snippet: str


class WebSearch(Protocol):
    name: str

    def search(self, query: str, count: int) -> list[WebResult]: ...


class HttpSearch(ABC):
    """Shared plumbing of the JSON search APIs: one client, typed errors that say what to do."""

    name = "http"
    default_url = ""

    def __init__(self, api_key: str, url: str = "", timeout: float = 15.0) -> None:
        self.api_key = api_key
        self.url = url or self.default_url
        self.client = httpx.Client(
            timeout=timeout, headers={"Accept": "application/json"}, transport=traced()
        )

    @abstractmethod
    def search(self, query: str, count: int) -> list[WebResult]:
        """Up to ``count`` results for ``query``, best first."""

    def close(self) -> None:
        self.client.close()

    def call(self, method: str, **kwargs: Any) -> Any:
        try:
            response = self.client.request(method, self.url, **kwargs)
        except httpx.HTTPError as exc:
            raise WebSearchError(
                f"The {self.name} search API at {self.url} could not be reached ({exc}); "
                "check web_search_url and the network."
            ) from exc
        if response.status_code in (401, 403):
            raise WebSearchError(
                f"The {self.name} search API refused the key ({response.status_code}); "
                "check its API key setting."
            )
        if response.status_code == 429:
            raise WebSearchError(f"The {self.name} search API is rate-limiting us; try later.")
        if response.status_code >= 400:
            raise WebSearchError(
                f"The {self.name} search API answered {response.status_code}: {response.text[:200]}"
            )
        try:
            return response.json()
        except ValueError as exc:
            raise WebSearchError(f"The {self.name} search API did not answer JSON.") from exc


def results(items: Any, url: str, title: str, snippet: str) -> list[WebResult]:
    """WebResults from a provider's list of result objects, by its field names."""
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get(url), str) and item[url]:
            out.append(
                WebResult(item[url], str(item.get(title) or ""), str(item.get(snippet) or ""))
            )
    return out
