"""The providers, each as its public API documents its request and response."""

from __future__ import annotations

from citewell.websearch.base import HttpSearch, WebResult, results


class SearxngSearch(HttpSearch):
    """GET <instance>/search?q=…&format=json → {"results": [{url, title, content}]}."""

    name = "searxng"

    def search(self, query: str, count: int) -> list[WebResult]:
        params = {"q": query, "format": "json", "pageno": 1, "safesearch": 1}
        data = self.call("GET", params=params)
        return results(data.get("results"), "url", "title", "content")[:count]


class BraveSearch(HttpSearch):
    """GET /res/v1/web/search, key in X-Subscription-Token → {"web": {"results": [...]}}."""

    name = "brave"
    default_url = "https://api.search.brave.com/res/v1/web/search"

    def search(self, query: str, count: int) -> list[WebResult]:
        data = self.call(
            "GET",
            params={"q": query, "count": min(count, 20)},
            headers={"X-Subscription-Token": self.api_key},
        )
        return results((data.get("web") or {}).get("results"), "url", "title", "description")


class TavilySearch(HttpSearch):
    """POST /search {"query", "max_results"}, Bearer key → {"results": [{url, title, content}]}."""

    name = "tavily"
    default_url = "https://api.tavily.com/search"

    def search(self, query: str, count: int) -> list[WebResult]:
        data = self.call(
            "POST",
            json={"query": query, "max_results": count},
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        return results(data.get("results"), "url", "title", "content")


class SerperSearch(HttpSearch):
    """POST /search {"q", "num"}, key in X-API-KEY → {"organic": [{link, title, snippet}]}."""

    name = "serper"
    default_url = "https://google.serper.dev/search"

    def search(self, query: str, count: int) -> list[WebResult]:
        data = self.call(
            "POST", json={"q": query, "num": count}, headers={"X-API-KEY": self.api_key}
        )
        return results(data.get("organic"), "link", "title", "snippet")


class GooglePseSearch(HttpSearch):
    """GET /customsearch/v1?key&cx&q&num&start → {"items": [{link, title, snippet}]}; the API
    gives at most 10 a page, so more are fetched page by page."""

    name = "google_pse"
    default_url = "https://www.googleapis.com/customsearch/v1"

    def __init__(self, api_key: str, engine_id: str, url: str = "", timeout: float = 15.0) -> None:
        super().__init__(api_key, url, timeout)
        self.engine_id = engine_id

    def search(self, query: str, count: int) -> list[WebResult]:
        found: list[WebResult] = []
        while len(found) < count:
            wanted = min(10, count - len(found))
            params: dict[str, str | int] = {
                "key": self.api_key,
                "cx": self.engine_id,
                "q": query,
                "num": wanted,
                "start": len(found) + 1,
            }
            page = results(self.call("GET", params=params).get("items"), "link", "title", "snippet")
            found.extend(page)
            if len(page) < wanted:
                break
        return found[:count]


class BingSearch(HttpSearch):
    """GET /v7.0/search?q&count, key in Ocp-Apim-Subscription-Key →
    {"webPages": {"value": [{url, name, snippet}]}}."""

    name = "bing"
    default_url = "https://api.bing.microsoft.com/v7.0/search"

    def search(self, query: str, count: int) -> list[WebResult]:
        data = self.call(
            "GET",
            params={"q": query, "count": count},
            headers={"Ocp-Apim-Subscription-Key": self.api_key},
        )
        return results((data.get("webPages") or {}).get("value"), "url", "name", "snippet")


class ExaSearch(HttpSearch):
    """POST /search {"query", "numResults"}, key in x-api-key → {"results": [{url, title}]}."""

    name = "exa"
    default_url = "https://api.exa.ai/search"

    def search(self, query: str, count: int) -> list[WebResult]:
        data = self.call(
            "POST",
            json={
                "query": query,
                "numResults": count,
                "contents": {"text": {"maxCharacters": 300}},
            },
            headers={"x-api-key": self.api_key},
        )
        return results(data.get("results"), "url", "title", "text")
