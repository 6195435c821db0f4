"""The web search role's conformance suite. Subclass it and give a ``web_search`` fixture
(a provider whose search for ``query`` finds at least three pages)."""

from __future__ import annotations

from citewell.websearch.base import WebResult, WebSearch


class WebSearchConformance:
    query = "ducks"

    def test_results_are_links_with_titles(self, web_search: WebSearch) -> None:
        results = web_search.search(self.query, 3)
        assert results and all(isinstance(r, WebResult) for r in results)
        assert all(r.url.startswith(("http://", "https://")) for r in results)
        assert all(isinstance(r.title, str) and isinstance(r.snippet, str) for r in results)

    def test_at_most_count_and_no_repeats(self, web_search: WebSearch) -> None:
        results = web_search.search(self.query, 2)
        assert 0 < len(results) <= 2
        assert len({r.url for r in results}) == len(results)
