"""Websites: the pages of one site under a start URL, found through its sitemap (when the
target is a sitemap's URL) or by following same-site links up to ``depth`` links away, at
most ``max_pages`` pages; ``robots.txt`` is obeyed; every fetch goes through the URL
fetches' client (its address guard refuses loopback, private and metadata addresses).

Pages are fetched while listing (links are only known from bodies), conditionally: the
cursor the connector keeps holds each page's ETag, Last-Modified, path and links, so an
unchanged page answers 304 and costs neither a download nor a parse, and its links are
still followed. A page's version is its ETag, else Last-Modified, else a hash of its bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html import unescape
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import httpx
from defusedxml import ElementTree  # type: ignore[import-untyped]

from citewell.errors import CitewellError, FetchFailed, InvalidInput
from citewell.fetch.guard import AddressGuard
from citewell.fetch.pages import UrlFetcher, check_url
from citewell.sources.connectors.entries import Listing, SyncEntry, SyncRequest
from citewell.sources.connectors.filters import spec

HREF = re.compile(rb"""<a\s[^>]*?href\s*=\s*["']([^"'#]+)""", re.IGNORECASE)
SITEMAP_LOC = "{http://www.sitemaps.org/schemas/sitemap/0.9}loc"
MAX_PAGES = 10_000
AGENT = "Citewell"


@dataclass
class Page:
    """What the cursor remembers of a page between runs."""

    path: str
    version: str
    etag: str = ""
    modified: str = ""
    links: tuple[str, ...] = ()


class WebsiteSource:
    def __init__(self, fetcher: Callable[[], UrlFetcher], guard: AddressGuard) -> None:
        self.fetcher = fetcher  # the URL fetches' client (guarded), made per run
        self.guard = guard

    def check(self, request: SyncRequest) -> None:
        parts = urlsplit(check_url(request.target))
        default_port = 443 if parts.scheme == "https" else 80
        self.guard.resolve(parts.hostname or "", parts.port or default_port)
        for name in ("depth", "max_pages"):
            value = request.options.get(name, "")
            if value and (not value.isdigit() or int(value) > MAX_PAGES):
                raise InvalidInput(f"{name} is a whole number up to {MAX_PAGES}.")

    def listing(self, request: SyncRequest) -> Listing:
        self.check(request)
        crawl = Crawl(self.fetcher(), request)
        try:
            pages = crawl.run()
        finally:
            crawl.fetcher.close()
        cursor = json.dumps({url: page.__dict__ for url, page in pages.items()})
        entries = [
            SyncEntry(page.path, page.version, crawl.reader(url), url)
            for url, page in pages.items()
            if page.path
        ]
        return Listing(iter(entries), cursor, tuple(crawl.skipped))


class Crawl:
    def __init__(self, fetcher: UrlFetcher, request: SyncRequest) -> None:
        self.fetcher, self.request = fetcher, request
        start = check_url(request.target)
        self.sitemap = start.lower().endswith(".xml")
        self.base = start.rsplit("/", 1)[0] + "/" if not self.sitemap else _site(start) + "/"
        if not self.sitemap and not start.endswith("/") and "." not in start.rsplit("/", 1)[-1]:
            self.base = start + "/"  # a folder-like start URL: its pages are under it
        self.start = start
        self.depth = int(request.options.get("depth") or 2)
        self.limit = int(request.options.get("max_pages") or 200)
        self.include = spec(request.options.get("include", ""))
        self.exclude = spec(request.options.get("exclude", ""))
        self.known = _remembered(request.cursor)
        self.bodies: dict[str, bytes] = {}
        self.skipped: list[str] = []
        self.robots = self._robots()

    def run(self) -> dict[str, Page]:
        queue = [(url, 0) for url in self._seeds()]
        seen = {url for url, _ in queue}
        pages: dict[str, Page] = {}
        while queue and len(pages) < self.limit:
            url, depth = queue.pop(0)
            page = self._visit(url)
            if page is None:
                continue
            pages[url] = page
            if depth < self.depth and not self.sitemap:
                for link in page.links:
                    if link not in seen and self._wanted(link):
                        seen.add(link)
                        queue.append((link, depth + 1))
        return pages

    def reader(self, url: str) -> Callable[[], bytes]:
        def read() -> bytes:
            body = self.bodies.get(url)
            return body if body is not None else self._fetch(url).data

        return read

    def _seeds(self) -> list[str]:
        if not self.sitemap:
            return [self.start]
        tree = ElementTree.fromstring(self._fetch(self.start).data)
        urls = [(e.text or "").strip() for e in tree.iter(SITEMAP_LOC)]
        return [u for u in dict.fromkeys(urls) if u and self._wanted(u)][: self.limit]

    def _visit(self, url: str) -> Page | None:
        """The page (fetched if changed), or None when it cannot be had (reported)."""
        before = self.known.get(url)
        try:
            return self._conditional(url, before)
        except CitewellError as error:
            if before is None:
                return None
            # It was there: a passing failure keeps it as it was (and is reported).
            self.skipped.append(f"{url}: {error.message}")
            return before

    def _conditional(self, url: str, before: Page | None) -> Page | None:
        headers = {}
        if before is not None and before.etag:
            headers["If-None-Match"] = before.etag
        if before is not None and before.modified:
            headers["If-Modified-Since"] = before.modified
        response = self._get(url, headers)
        if response.status_code == 304 and before is not None:
            return before
        if response.status_code in (404, 410):
            return None  # gone: it leaves the KB
        if response.status_code >= 400:
            raise FetchFailed(f"{url} answered {response.status_code}.")
        final = str(response.url)
        if _site(final) != _site(self.base):
            return None  # redirected off the site: not this site's page
        body = response.content
        self.bodies[url] = body
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        etag, modified = response.headers.get("ETag", ""), response.headers.get("Last-Modified", "")
        return Page(
            path=self._path(url, kind),
            version=etag or modified or hashlib.sha256(body).hexdigest()[:32],
            etag=etag,
            modified=modified,
            links=tuple(_links(final, body)) if "html" in kind else (),
        )

    def _get(self, url: str, headers: dict[str, str]) -> httpx.Response:
        if not self.robots.can_fetch(AGENT, url):
            raise FetchFailed(f"{url}: robots.txt asks not to fetch it.")
        try:
            return self.fetcher.client.get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise FetchFailed(f"Could not fetch {url}: {exc}.") from exc

    def _fetch(self, url: str) -> Any:
        if not self.robots.can_fetch(AGENT, url):
            raise FetchFailed(f"{url}: robots.txt asks not to fetch it.")
        return self.fetcher.fetch(url)

    def _robots(self) -> RobotFileParser:
        robots = RobotFileParser()
        try:
            response = self.fetcher.client.get(_site(self.start) + "/robots.txt")
            lines = response.text.splitlines() if response.status_code == 200 else []
        except httpx.HTTPError:
            lines = []
        robots.parse(lines)
        return robots

    def _wanted(self, url: str) -> bool:
        if not url.startswith(self.base) or len(url) > 2000:
            return False
        relative = unquote(urlsplit(url).path)[len(urlsplit(self.base).path) :]
        if self.exclude is not None and self.exclude.match_file(relative):
            return False
        return self.include is None or self.include.match_file(relative)

    def _path(self, url: str, kind: str) -> str:
        """The page's path in the KB: its URL under the start, with an extension that says
        its type ("guide/install.html"; the start page itself "index.html")."""
        parts = urlsplit(url)
        relative = unquote(parts.path)[len(urlsplit(self.base).path) :].strip("/")
        relative = relative or "index"
        if parts.query:
            relative += "-" + hashlib.sha256(parts.query.encode()).hexdigest()[:8]
        leaf = relative.rsplit("/", 1)[-1]
        if "html" in kind and not leaf.lower().endswith((".html", ".htm")):
            relative += ".html"
        clean = "/".join(p for p in relative.split("/") if p not in ("", ".", ".."))
        return clean[:900]


def _site(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _links(page_url: str, body: bytes) -> Iterator[str]:
    for match in HREF.finditer(body[:5_000_000]):
        href = unescape(match.group(1).decode("utf-8", "replace")).strip()
        url, _ = urldefrag(urljoin(page_url, href))
        if url.startswith(("http://", "https://")):
            yield url


def _remembered(cursor: str) -> dict[str, Page]:
    try:
        raw = json.loads(cursor) if cursor else {}
    except json.JSONDecodeError:
        return {}
    pages = {}
    for url, value in raw.items() if isinstance(raw, dict) else ():
        if isinstance(value, dict):
            value["links"] = tuple(value.get("links", ()))
            pages[url] = Page(**value)
    return pages
