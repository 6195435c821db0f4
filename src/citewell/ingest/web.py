"""Remote sources into knowledge bases: a URL (a page, a remote file or a YouTube video) and
web searches. Order: search → fetch every result at once (one failure never stops the rest)
→ ingest what came back → the files, for retrieval and citations like any other source.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from citewell.catalog import Catalog, FileRecord
from citewell.config import Settings
from citewell.errors import CitewellError, InvalidInput, WebSearchError
from citewell.fetch import (
    AddressGuard,
    FetchLimits,
    UrlFetcher,
    YouTubeTranscripts,
    check_url,
    video_id,
)
from citewell.ingest.chunk_rows import sha256
from citewell.ingest.ingestor import Ingestor
from citewell.sources import SourceItem
from citewell.types import IngestReport
from citewell.websearch import WebResult, WebSearch, build_web_search

WEB_KB = "web"  # where URLs go when no knowledge base is named
WEB_SEARCH_KB = "web-search"  # where web search results go
MAX_QUERIES = 5
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UrlIngest:
    url: str
    title: str
    kb: str  # the id
    record: FileRecord
    report: IngestReport


@dataclass(frozen=True)
class SearchHit:
    result: WebResult
    query: str
    file: FileRecord | None = None
    error: str | None = None


@dataclass
class WebSearchOutcome:
    kb: str  # the name
    queries: list[str]
    hits: list[SearchHit] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    kb_id: str = ""

    @property
    def files(self) -> list[FileRecord]:
        return [h.file for h in self.hits if h.file is not None]


def is_url(target: object) -> bool:
    """A str that is an http(s) URL (as opposed to a path)."""
    return isinstance(target, str) and target.lower().startswith(("http://", "https://"))


def in_domains(url: str, domains: Sequence[str]) -> bool:
    """``url``'s host is one of ``domains`` or under one (no domains: any host)."""
    host = (urlsplit(url).hostname or "").lower()
    return not domains or any(host == d or host.endswith("." + d) for d in domains)


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class WebSources:
    def __init__(self, settings: Settings, catalog: Catalog, ingestor: Ingestor) -> None:
        self.settings = settings
        self.catalog = catalog
        self.ingestor = ingestor
        guard = AddressGuard.from_allowlist(
            _split(settings.web.web_fetch_allowlist), settings.web.web_fetch_allow_private
        )
        limits = FetchLimits(
            settings.web.web_fetch_timeout,
            settings.web.web_fetch_max_bytes,
            settings.web.web_fetch_max_redirects,
            settings.web.web_fetch_user_agent,
        )
        self.fetcher = UrlFetcher(guard, limits)
        self.youtube = YouTubeTranscripts(
            settings.web.youtube_url,
            settings.web.web_fetch_timeout,
            _split(settings.web.youtube_languages),
        )
        self._search: WebSearch | None = None
        self.domains = _split(settings.web.web_search_domain_filter.lower())
        self.tool_domains = _split(settings.answering.tool_web_domains.lower())

    def close(self) -> None:
        self.fetcher.close()
        self.youtube.close()

    # --- one URL ------------------------------------------------------------------------
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

    def ingest_url(
        self, url: str, kb: str | None = None, languages: Sequence[str] = (), added_by: str = ""
    ) -> UrlIngest:
        item = replace(self.item(url, languages=languages), added_by=added_by)
        kb_id = self.catalog.ensure_kb(kb or WEB_KB).id  # ids from here on: names are per owner
        report = self.ingestor.ingest([item], kb_id, strict=True)
        tenant = self.catalog.get_kb(kb_id).owner_id
        record = self.catalog.file_by_sha(sha256(item.read()), tenant)
        assert record is not None  # strict ingest either stored it or raised
        return UrlIngest(item.url, item.name, kb_id, record, report)

    # --- web search ---------------------------------------------------------------------
    def provider(self) -> WebSearch:
        if self._search is None:
            self._search = build_web_search(self.settings)
        return self._search

    def search(
        self,
        queries: Sequence[str],
        kb: str | None = None,
        count: int | None = None,
        for_tools: bool = False,
    ) -> WebSearchOutcome:
        """``for_tools``: a model's search_web call, whose result pages must also lie in
        tool_web_domains when that is set."""
        queries = [q.strip() for q in queries if q.strip()][:MAX_QUERIES]
        if not queries:
            raise InvalidInput("Give at least one non-empty search query.")
        target = self.catalog.ensure_kb(kb or WEB_SEARCH_KB)
        outcome = WebSearchOutcome(target.name, queries, kb_id=target.id)
        found = self._results(queries, count or self.settings.web.web_search_result_count, outcome)
        if for_tools:
            found = [(r, q) for r, q in found if self.tool_may_reach(r.url)]
        fetched = self.fetch_results([r for r, _ in found])
        items = []
        for (result, query), got in zip(found, fetched, strict=True):
            if isinstance(got, SourceItem):
                items.append((result, query, got))
            else:
                outcome.hits.append(SearchHit(result, query, error=got))
        if items:
            self.ingestor.ingest([i for _, _, i in items], target.id)  # failures are per file
        in_kb = self.catalog.files_in_kb(target.id)
        for result, query, item in items:
            record = in_kb.get(item.key)
            error = None if record else "its text could not be extracted"
            outcome.hits.append(SearchHit(result, query, record, error))
        return outcome

    def _results(
        self, queries: list[str], count: int, outcome: WebSearchOutcome
    ) -> list[tuple[WebResult, str]]:
        provider, seen, found = self.provider(), set(), []
        for query in queries:
            try:
                results = provider.search(query, count)
            except WebSearchError as exc:
                outcome.errors.append(f"{query}: {exc.message}")
                continue
            for result in results[:count]:
                if result.url not in seen and self._domain_allowed(result.url):
                    seen.add(result.url)
                    found.append((result, query))
        if len(outcome.errors) == len(queries):
            raise WebSearchError("; ".join(outcome.errors))
        return found

    def _domain_allowed(self, url: str) -> bool:
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
