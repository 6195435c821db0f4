"""The sources role: what brings documents in. A source kind turns a request (a path, a URL,
a query, bytes) into SourceItems for the ingestor; every kind works side by side.

Built in: ``upload`` (bytes handed over), ``text``, ``path`` (files and folders), ``url`` (a
page or remote file), ``youtube`` (a video's transcript), ``web-search`` (the pages a
query finds), and the kinds connectors keep in sync (``sources.connectors.Syncable``): ``folder``,
``git``, ``webdav``, ``s3`` and ``website``. Plug-ins (connectors) register in the entry point group
``citewell.sources`` and are used with ``citewell ingest --source NAME TARGET``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from citewell.errors import CitewellError
from citewell.plugins import Registry
from citewell.sources.base import Source, SourceContext, SourceRequest
from citewell.sources.connectors.factories import (
    folder_source,
    git_source,
    s3_source,
    webdav_source,
    website_source,
)
from citewell.sources.items import SourceItem
from citewell.sources.kinds import (
    ListedSource,
    PathSource,
    TextSource,
    UploadSource,
    UrlSource,
    WebSearchSource,
)
from citewell.sources.web import is_url

__all__ = ["SOURCES", "Source", "SourceContext", "SourceRequest", "gather", "source_of"]

SOURCES: Registry[Callable[[SourceContext], Source]] = Registry("sources")

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
