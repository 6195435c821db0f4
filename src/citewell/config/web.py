"""The ``web`` section: web pages, web search and fetching URLs."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import field_validator

from citewell.config.fields import Section, backend, setting


class WebSection(Section):
    """Fetching web pages, web search providers and YouTube transcripts."""

    web_fetch_timeout: float = setting(
        20.0,
        "Seconds a web page (or video transcript) fetch may take in all, connecting included.",
        "WEB_LOADER_TIMEOUT",
    )

    web_fetch_max_bytes: int = setting(
        20 * 1024 * 1024, "Largest web page or remote file fetched, in bytes."
    )

    web_fetch_max_redirects: int = setting(5, "Redirects followed when fetching a URL.")

    web_fetch_allowlist: str = setting(
        "",
        "Comma-separated hosts, IP addresses or networks (CIDR) that URL fetches may reach "
        "although they are private, loopback or link-local, e.g. 'wiki.internal,10.0.0.0/8'. "
        "Everything non-public is refused otherwise (SSRF guard).",
    )

    web_fetch_allow_private: bool = setting(
        False,
        "Let URL fetches reach every private, loopback and link-local address. Only for a "
        "server that nobody untrusted can use; prefer web_fetch_allowlist.",
        "ENABLE_RAG_LOCAL_WEB_FETCH",
    )

    web_fetch_user_agent: str = setting(
        "Mozilla/5.0 (compatible; Citewell; +https://github.com/citewell/citewell)",
        "User-Agent sent when fetching pages.",
        "USER_AGENT",
    )

    web_search_engine: Annotated[
        str,
        backend(
            "web_search", "", "searxng", "brave", "tavily", "serper", "google_pse", "bing", "exa"
        ),
    ] = setting(
        "",
        "Web search provider; empty turns web search off.",
        "WEB_SEARCH_ENGINE",
        "RAG_WEB_SEARCH_ENGINE",
    )

    web_search_result_count: int = setting(
        3,
        "Pages fetched per search query.",
        "WEB_SEARCH_RESULT_COUNT",
        "RAG_WEB_SEARCH_RESULT_COUNT",
    )

    web_search_concurrent_requests: int = setting(
        8,
        "Result pages fetched at the same time.",
        "WEB_SEARCH_CONCURRENT_REQUESTS",
        "RAG_WEB_SEARCH_CONCURRENT_REQUESTS",
    )

    web_search_domain_filter: str = setting(
        "",
        "Comma-separated domains: when set, only results from these (and their subdomains) "
        "are fetched.",
        "WEB_SEARCH_DOMAIN_FILTER_LIST",
        "RAG_WEB_SEARCH_DOMAIN_FILTER_LIST",
    )

    web_search_url: str = setting(
        "",
        "The provider's API endpoint, for a proxy or a self-hosted compatible service. Empty: "
        "the provider's public endpoint (for SearXNG, searxng_query_url).",
    )

    searxng_query_url: str = setting(
        "",
        "SearXNG search URL, e.g. 'http://searxng:8080/search' (its JSON format must be enabled).",
        "SEARXNG_QUERY_URL",
    )

    brave_search_api_key: str = setting("", "Brave Search API key.", "BRAVE_SEARCH_API_KEY")

    tavily_api_key: str = setting("", "Tavily API key.", "TAVILY_API_KEY")

    serper_api_key: str = setting("", "Serper API key.", "SERPER_API_KEY")

    google_pse_api_key: str = setting(
        "", "Google Programmable Search API key.", "GOOGLE_PSE_API_KEY"
    )

    google_pse_engine_id: str = setting(
        "", "Google Programmable Search engine id (cx).", "GOOGLE_PSE_ENGINE_ID"
    )

    bing_search_api_key: str = setting(
        "", "Bing Web Search v7 subscription key.", "BING_SEARCH_V7_SUBSCRIPTION_KEY"
    )

    exa_api_key: str = setting("", "Exa API key.", "EXA_API_KEY")

    youtube_languages: str = setting(
        "en",
        "Preferred transcript languages, comma-separated, best first; when the video has "
        "none of them, its first transcript is used.",
        "YOUTUBE_LOADER_LANGUAGE",
    )

    youtube_url: str = setting(
        "https://www.youtube.com", "Where YouTube's pages and player API are fetched from."
    )

    @field_validator("web_fetch_timeout", mode="before")
    @classmethod
    def _owui_empty_timeout(cls, value: Any) -> Any:
        # Open WebUI leaves WEB_LOADER_TIMEOUT empty to mean "the default".
        return 20.0 if value == "" else value
