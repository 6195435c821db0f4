"""The built-in source kinds: ``upload`` and ``text`` (bytes handed over), ``path`` (files and
folders), ``url`` and ``youtube`` (one page, remote file or transcript), ``web-search`` (the
pages a query finds), and ``ListedSource``, which reads a connector's kind once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from citewell.errors import InvalidInput
from citewell.fetch import video_id
from citewell.sources.base import SourceRequest
from citewell.sources.connectors import Listing, Syncable, SyncRequest
from citewell.sources.items import SourceItem, text_item, walk
from citewell.sources.web import WebReader, in_domains


def uploaded(name: str, data: bytes) -> SourceItem:
    """Bytes handed over under ``name``; the key is their hash (an upload has no path)."""
    key = f"upload:{hashlib.sha256(data).hexdigest()[:32]}"
    return SourceItem(key=key, name=name, read=lambda: data)


class UploadSource:
    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        yield uploaded(request.target, request.data)


class TextSource:
    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        mime_type = request.options.get("mime_type", "text/plain")
        yield text_item(request.target, request.data.decode("utf-8"), mime_type)


class PathSource:
    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        yield from walk([Path(request.target)])


class UrlSource:
    def __init__(self, web: WebReader, video_only: bool = False) -> None:
        self.web, self.video_only = web, video_only

    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        if self.video_only and video_id(request.target) is None:
            raise InvalidInput(f"{request.target} is not a YouTube video URL.")
        languages = [x for x in request.options.get("languages", "").split(",") if x]
        yield self.web.item(request.target, languages=languages)


class WebSearchSource:
    """The pages a query finds (web_search_engine), fetched; pages that fail are skipped."""

    def __init__(self, web: WebReader) -> None:
        self.web = web

    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        count = (
            int(request.options.get("count", 0)) or self.web.settings.web.web_search_result_count
        )
        found = self.web.provider().search(request.target, count)[:count]
        results = [r for r in found if in_domains(r.url, self.web.domains)]
        for got in self.web.fetch_results(results):
            if isinstance(got, SourceItem):
                yield got


class ListedSource:
    """A syncable kind (connectors) as a source ``citewell ingest --source`` can read too
    (the local operator: no allow-list). Its entries' paths are the items' keys."""

    def __init__(self, inner: Syncable) -> None:
        self.inner = inner

    def check(self, request: SyncRequest) -> None:
        self.inner.check(request)

    def listing(self, request: SyncRequest) -> Listing:
        return self.inner.listing(request)

    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        sync = SyncRequest(request.target, request.options, trusted=True)
        for entry in self.inner.listing(sync).entries:
            name = entry.path.rsplit("/", 1)[-1]
            yield SourceItem(key=entry.path, name=name, read=entry.read, url=entry.url)
