"""Remote sources into knowledge bases: a URL (a page, a remote file or a YouTube video) and
web searches. Order: search → fetch every result at once (one failure never stops the rest)
→ ingest what came back → the files, for retrieval and citations like any other source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from citewell.catalog import Catalog, FileRecord
from citewell.config import Settings
from citewell.errors import InvalidInput, WebSearchError
from citewell.ingest.chunk_rows import sha256
from citewell.ingest.ingestor import Ingestor
from citewell.sources import SourceItem
from citewell.sources.base import SourceContext
from citewell.sources.web import WebReader
from citewell.types import IngestReport
from citewell.websearch import WebResult

WEB_KB = "web"  # where URLs go when no knowledge base is named
WEB_SEARCH_KB = "web-search"  # where web search results go
MAX_QUERIES = 5


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


class WebSources:
    """The web into knowledge bases: a URL into a KB (default 'web'), a web search's result
    pages into a KB (default 'web-search'). Fetching is the ``WebReader``'s."""

    def __init__(self, reader: WebReader, catalog: Catalog, ingestor: Ingestor) -> None:
        self.reader = reader
        self.settings = reader.settings
        self.catalog = catalog
        self.ingestor = ingestor

    @classmethod
    def from_settings(cls, settings: Settings, catalog: Catalog, ingestor: Ingestor) -> WebSources:
        return cls(WebReader(settings), catalog, ingestor)

    def source_context(self) -> SourceContext:
        """What source kinds may use: the start-up settings (what they read, the web and
        connector settings, does not change at run time) and this web reader."""
        return SourceContext(self.settings, self.reader)

    def close(self) -> None:
        self.reader.close()

    def ingest_url(
        self, url: str, kb: str | None = None, languages: Sequence[str] = (), added_by: str = ""
    ) -> UrlIngest:
        item = replace(self.reader.item(url, languages=languages), added_by=added_by)
        kb_id = self.catalog.ensure_kb(kb or WEB_KB).id  # ids from here on: names are per owner
        report = self.ingestor.ingest([item], kb_id, strict=True)
        tenant = self.catalog.get_kb(kb_id).owner_id
        record = self.catalog.file_by_sha(sha256(item.read()), tenant)
        assert record is not None  # strict ingest either stored it or raised
        return UrlIngest(item.url, item.name, kb_id, record, report)

    # --- web search ---------------------------------------------------------------------
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
            found = [(r, q) for r, q in found if self.reader.tool_may_reach(r.url)]
        fetched = self.reader.fetch_results([r for r, _ in found])
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
        provider, seen, found = self.reader.provider(), set(), []
        for query in queries:
            try:
                results = provider.search(query, count)
            except WebSearchError as exc:
                outcome.errors.append(f"{query}: {exc.message}")
                continue
            for result in results[:count]:
                if result.url not in seen and self.reader.domain_allowed(result.url):
                    seen.add(result.url)
                    found.append((result, query))
        if len(outcome.errors) == len(queries):
            raise WebSearchError("; ".join(outcome.errors))
        return found
