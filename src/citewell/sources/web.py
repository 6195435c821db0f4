"""Reading the web as a source: one URL (a page, a remote file or a YouTube video's
transcript) as a ``SourceItem``, the web search provider, and many result pages fetched at
once. Where the items go (a KB, the ingestor) is ``citewell.ingest.web``'s part."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from citewell.config import Settings
from citewell.errors import CitewellError
from citewell.fetch import (
    AddressGuard,
    FetchLimits,
    UrlFetcher,
    YouTubeTranscripts,
    check_url,
    video_id,
)
from citewell.sources.items import SourceItem
from citewell.websearch import WebResult, WebSearch, build_web_search

logger = logging.getLogger(__name__)


def is_url(target: object) -> bool:
    """A str that is an http(s) URL (as opposed to a path)."""
    return isinstance(target, str) and target.lower().startswith(("http://", "https://"))


def in_domains(url: str, domains: Sequence[str]) -> bool:
    """``url``'s host is one of ``domains`` or under one (no domains: any host)."""
    host = (urlsplit(url).hostname or "").lower()
    return not domains or any(host == d or host.endswith("." + d) for d in domains)


def split_list(value: str) -> list[str]:
    """A comma-separated setting's items, trimmed, empty ones left out."""
    return [part.strip() for part in value.split(",") if part.strip()]


def fetch_limits(settings: Settings) -> FetchLimits:
    """The URL fetches' limits (web_fetch_*), for pages, remote files and crawled sites."""
    web = settings.web
    return FetchLimits(
        web.web_fetch_timeout,
        web.web_fetch_max_bytes,
        web.web_fetch_max_redirects,
        web.web_fetch_user_agent,
    )


def fetch_guard(settings: Settings) -> AddressGuard:
    """The addresses any fetch may reach (web_fetch_allowlist, web_fetch_allow_private)."""
    web = settings.web
    return AddressGuard.from_allowlist(
        split_list(web.web_fetch_allowlist), web.web_fetch_allow_private
    )


class WebReader:
    """The web as the settings allow it (web_fetch_*, youtube_*, web_search_*): built once
    per engine, shared by every request; ``close`` ends its HTTP clients."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        web = settings.web
        self.fetcher = UrlFetcher(fetch_guard(settings), fetch_limits(settings))
        self.youtube = YouTubeTranscripts(
            web.youtube_url, web.web_fetch_timeout, split_list(web.youtube_languages)
        )
        self._search: WebSearch | None = None
        self.domains = split_list(web.web_search_domain_filter.lower())
        self.tool_domains = split_list(settings.answering.tool_web_domains.lower())

    def close(self) -> None:
        self.fetcher.close()
        self.youtube.close()

    def item(self, url: str, source: str = "url", languages: Sequence[str] = ()) -> SourceItem:
        """Fetch ``url`` (a video's transcript for YouTube) as something to ingest."""
        url = check_url(url)
        if video_id(url) is not None:
            transcript = self.youtube.transcript(url, languages)
            data = transcript.text.encode()
            return SourceItem(
                key=f"url:{transcript.url}",
                name=transcript.title,
                read=lambda: data,
                source="youtube",
                url=transcript.url,
                reader_name=f"{transcript.video_id}.md",
            )
        page = self.fetcher.fetch(url)
        return SourceItem(
            key=f"url:{url}",
            name=page.title,
            read=lambda: page.data,
            source=source,
            url=page.final_url,
            reader_name=page.loader_name,
        )

    def provider(self) -> WebSearch:
        """The web_search_engine, built on first use (a server without one never builds it)."""
        if self._search is None:
            self._search = build_web_search(self.settings)
        return self._search

    def domain_allowed(self, url: str) -> bool:
        """Whether a search result may be fetched (web_search_domain_filter; empty: any)."""
        return in_domains(url, self.domains)

    def tool_may_reach(self, url: str) -> bool:
        """Whether a model's web tool may fetch ``url`` (tool_web_domains; empty: any)."""
        return in_domains(url, self.tool_domains)

    def fetch_results(self, results: list[WebResult]) -> list[SourceItem | str]:
        """Every result page at once (up to web_search_concurrent_requests); a failure is that
        page's error message, never the batch's."""
        if not results:
            return []
        workers = max(1, min(self.settings.web.web_search_concurrent_requests, len(results)))
        with ThreadPoolExecutor(workers, thread_name_prefix="web-fetch") as pool:
            return list(pool.map(self._fetch_one, results))

    def _fetch_one(self, result: WebResult) -> SourceItem | str:
        try:
            return self.item(result.url, source="web-search")
        except CitewellError as exc:
            return exc.message
        except Exception as exc:  # one page's unexpected failure must not sink the batch
            logger.exception("fetching %s failed", result.url)
            return f"unexpected error: {type(exc).__name__}"
