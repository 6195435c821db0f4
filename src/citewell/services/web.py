"""Pages, videos and web searches into knowledge bases, as one caller sees them: the target
KB is the named one (write access checked, made for the caller if new) or the caller's own
default; what lands there is named as the caller sees it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citewell.catalog import FileRecord, KnowledgeBase
from citewell.engine.scoped import Scoped
from citewell.ingest.web import WEB_KB, WEB_SEARCH_KB, UrlIngest, WebSearchOutcome

__all__ = ["Fetched", "WebService", "WebSearchOutcome"]


@dataclass(frozen=True)
class Fetched:
    kb: KnowledgeBase
    done: UrlIngest
    file: FileRecord  # the file as the caller's link in the KB names it


class WebService:
    def __init__(self, view: Scoped) -> None:
        self.view = view
        self.app = view.app

    def fetch(self, url: str, kb: str | None, languages: Sequence[str] = ()) -> Fetched:
        """A page, remote file or YouTube transcript into ``kb`` (default: the caller's own
        'web' KB)."""
        with self.view.target_kb(kb, WEB_KB) as target:
            done = self.app.ingest_url(url, target.id, languages, self.view.access.user_id)
        return Fetched(self.view.kb(target.id), done, self.view.file(done.record.id))

    def search(
        self, queries: Sequence[str], kb: str | None, count: int | None
    ) -> tuple[KnowledgeBase, WebSearchOutcome]:
        """The result pages of ``queries``, fetched into ``kb`` (default: the caller's own
        'web-search' KB); a page that fails is reported in its hit."""
        with self.view.target_kb(kb, WEB_SEARCH_KB) as target:
            outcome = self.app.web_search(queries, target.id, count)
        return target, outcome
