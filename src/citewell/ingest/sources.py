"""The sources role: what brings documents in. A source kind turns a request (a path, a URL,
a query, bytes) into SourceItems for the ingestor; every kind works side by side.

Built in: ``upload`` (bytes handed over), ``text``, ``path`` (files and folders), ``url`` (a
page or remote file), ``youtube`` (a video's transcript), ``web-search`` (the pages a
query finds), and the kinds connectors keep in sync (``connectors.Syncable``): ``folder``,
``git``, ``webdav``, ``s3`` and ``website``. Plug-ins (connectors) register in the entry point group
``citewell.sources`` and are used with ``citewell ingest --source NAME TARGET``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from citewell.config import Settings
from citewell.connectors import Listing, Syncable, SyncRequest
from citewell.connectors.folder import FolderSource
from citewell.connectors.folder_grants import FolderGrants
from citewell.connectors.git import GitSource
from citewell.connectors.s3 import S3Source
from citewell.connectors.webdav import WebDavSource
from citewell.connectors.website import WebsiteSource
from citewell.errors import CitewellError, InvalidInput
from citewell.fetch import video_id
from citewell.fetch.guard import AddressGuard
from citewell.fetch.pages import FetchLimits, UrlFetcher
from citewell.ingest.chunk_rows import sha256
from citewell.ingest.web import WebSources, in_domains, is_url
from citewell.plugins import Registry
from citewell.sources import SourceItem, text_item, walk


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
    web: WebSources


class Source(Protocol):
    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        """The items the request names, each read when the ingestor gets to it. Raises a
        CitewellError (InvalidInput, FetchError, …) when the request cannot be served."""
        ...


SOURCES: Registry[Callable[[SourceContext], Source]] = Registry("sources")


class UploadSource:
    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        data, name = request.data, request.target
        yield SourceItem(key=f"upload:{sha256(data)[:32]}", name=name, read=lambda: data)


class TextSource:
    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        mime_type = request.options.get("mime_type", "text/plain")
        yield text_item(request.target, request.data.decode("utf-8"), mime_type)


class PathSource:
    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        yield from walk([Path(request.target)])


class UrlSource:
    def __init__(self, web: WebSources, video_only: bool = False) -> None:
        self.web, self.video_only = web, video_only

    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        if self.video_only and video_id(request.target) is None:
            raise InvalidInput(f"{request.target} is not a YouTube video URL.")
        languages = [x for x in request.options.get("languages", "").split(",") if x]
        yield self.web.item(request.target, languages=languages)


class WebSearchSource:
    """The pages a query finds (web_search_engine), fetched; pages that fail are skipped."""

    def __init__(self, web: WebSources) -> None:
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


SOURCES.add("upload", lambda _: UploadSource())
SOURCES.add("text", lambda _: TextSource())
SOURCES.add("path", lambda _: PathSource())
SOURCES.add("url", lambda c: UrlSource(c.web))
SOURCES.add("youtube", lambda c: UrlSource(c.web, video_only=True))
SOURCES.add("web-search", lambda c: WebSearchSource(c.web))
SOURCES.add("folder", lambda c: ListedSource(folder_source(c.settings)))
SOURCES.add("git", lambda c: ListedSource(git_source(c.settings)))
SOURCES.add("webdav", lambda c: ListedSource(webdav_source(c.settings)))
SOURCES.add("s3", lambda c: ListedSource(s3_source(c.settings)))
SOURCES.add("website", lambda c: ListedSource(website_source(c.settings)))


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


def folder_grants(settings: Settings) -> FolderGrants:
    """connector_allowed_paths, and the data dir (and a SQLite database elsewhere), which
    no connector reads."""
    protected = [settings.storage.data_dir]
    database = settings.storage.database_url
    if database.startswith("sqlite:///") and database[len("sqlite:///") :]:
        protected.append(Path(database[len("sqlite:///") :]))
    return FolderGrants.parse(settings.connectors.connector_allowed_paths, protected)


def folder_source(settings: Settings) -> FolderSource:
    return FolderSource(folder_grants(settings))


def git_source(settings: Settings) -> GitSource:
    """Repositories cloned under the data dir; remote hosts pass the URL fetches' guard."""
    cache = settings.storage.data_dir / "connectors" / "git"
    return GitSource(cache, folder_grants(settings), fetch_guard(settings))


def webdav_source(settings: Settings) -> WebDavSource:
    """WebDAV folders; hosts pass the URL fetches' guard, files at most max_upload_bytes."""
    return WebDavSource(fetch_guard(settings), settings.server.max_upload_bytes)


def s3_source(settings: Settings) -> S3Source:
    """S3-compatible buckets; endpoints pass the URL fetches' guard."""
    return S3Source(fetch_guard(settings), settings.server.max_upload_bytes)


def website_source(settings: Settings) -> WebsiteSource:
    """Websites, fetched by a client of the URL fetches (their guard and limits) per run."""
    guard = fetch_guard(settings)
    return WebsiteSource(lambda: UrlFetcher(guard, fetch_limits(settings)), guard)


def fetch_limits(settings: Settings) -> FetchLimits:
    web = settings.web
    return FetchLimits(
        web.web_fetch_timeout,
        web.web_fetch_max_bytes,
        web.web_fetch_max_redirects,
        web.web_fetch_user_agent,
    )


def fetch_guard(settings: Settings) -> AddressGuard:
    return AddressGuard.from_allowlist(
        settings.web.web_fetch_allowlist.split(","), settings.web.web_fetch_allow_private
    )


def source_of(target: str) -> str:
    """The kind a bare command-line target is: a URL or a path."""
    return "url" if is_url(target) else "path"


def gather(
    targets: Sequence[str], kind: str, context: SourceContext
) -> tuple[list[SourceItem], list[str]]:
    """Items of every target (read through ``kind``, or by each target's look), and the
    targets that failed. A missing path stops everything (a typo); a URL or other remote
    target that fails counts as one failed file."""
    items: list[SourceItem] = []
    failed = []
    for target in targets:
        chosen = kind or source_of(target)
        source = SOURCES.get(chosen)(context)
        try:
            items.extend(source.items(SourceRequest(target)))
        except CitewellError as exc:
            if chosen == "path":
                raise
            failed.append(f"{target}: {exc.message}")
    return items, failed
