"""Fetching a user-supplied URL: guarded, bounded in time, size and redirects."""

from __future__ import annotations

import html
import mimetypes
import re
import time
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import httpx

from citewell.errors import FetchFailed, FetchTimeout, InvalidInput, PayloadTooLarge
from citewell.fetch.guard import AddressGuard, GuardedTransport
from citewell.tracing.client import traced

TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
# Content types whose loaders cannot tell them apart from plain text by the bytes alone.
EXTENSIONS = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/plain": ".txt",
    "text/csv": ".csv",
    "application/json": ".json",
    "application/pdf": ".pdf",
}


@dataclass(frozen=True)
class FetchLimits:
    timeout: float = 20.0
    max_bytes: int = 20 * 1024 * 1024
    max_redirects: int = 5
    user_agent: str = "Citewell"


@dataclass(frozen=True)
class FetchedPage:
    url: str  # as asked for
    final_url: str  # after redirects
    content_type: str
    data: bytes
    title: str

    @property
    def loader_name(self) -> str:
        """A file name whose extension tells the loaders what the content type said."""
        path = urlsplit(self.final_url).path
        leaf = unquote(path.rsplit("/", 1)[-1]) or "index"
        extension = EXTENSIONS.get(self.content_type) or mimetypes.guess_extension(
            self.content_type or ""
        )
        if extension and not leaf.lower().endswith(extension):
            return leaf + extension
        return leaf


def check_url(url: str) -> str:
    """The URL, stripped, if it is an absolute http(s) URL; InvalidInput otherwise."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        httpx.URL(url)  # the checks the client will make: characters, IDNA host names
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except (ValueError, UnicodeError, httpx.InvalidURL) as exc:
        raise InvalidInput(f"{url!r} is not a valid URL ({exc}).") from exc
    if not valid:
        raise InvalidInput(f"{url!r} is not an http(s) URL; give a full address like https://…")
    return url


def page_title(data: bytes, content_type: str, url: str) -> str:
    """The HTML <title>, else the last path segment, else the host."""
    if "html" in content_type:
        match = TITLE.search(data[:262_144])
        if match:
            title = " ".join(html.unescape(match.group(1).decode("utf-8", "replace")).split())
            if title:
                return title[:300]
    parts = urlsplit(url)
    leaf = unquote(parts.path.rstrip("/").rsplit("/", 1)[-1])
    return leaf or parts.hostname or url


class UrlFetcher:
    """GETs URLs that users hand over; each refused or failed fetch is one typed error."""

    def __init__(self, guard: AddressGuard, limits: FetchLimits) -> None:
        self.guard = guard
        self.limits = limits
        self.client = httpx.Client(
            transport=traced(GuardedTransport(guard)),
            timeout=httpx.Timeout(limits.timeout),
            follow_redirects=True,
            max_redirects=limits.max_redirects,
            headers={"User-Agent": limits.user_agent, "Accept": "*/*"},
            trust_env=False,
        )

    def close(self) -> None:
        self.client.close()

    def fetch(self, url: str) -> FetchedPage:
        url = check_url(url)
        deadline = time.monotonic() + self.limits.timeout
        try:
            with self.client.stream("GET", url) as response:
                data = self._body(url, response, deadline)
                content_type = _content_type(response)
                final_url = str(response.url)
        except httpx.TooManyRedirects as exc:
            raise FetchFailed(
                f"{url} redirects more than {self.limits.max_redirects} times; "
                "give the final address or raise web_fetch_max_redirects."
            ) from exc
        except httpx.TimeoutException as exc:
            raise FetchTimeout(
                f"{url} did not answer within {self.limits.timeout:g} s; try again later or "
                "raise web_fetch_timeout."
            ) from exc
        except httpx.HTTPError as exc:
            raise FetchFailed(f"Could not fetch {url}: {exc}.") from exc
        except (UnicodeError, ValueError, httpx.InvalidURL) as exc:  # e.g. an unencodable host
            raise InvalidInput(f"{url!r} is not a valid URL ({exc}).") from exc
        return FetchedPage(url, final_url, content_type, data, page_title(data, content_type, url))

    def _body(self, url: str, response: httpx.Response, deadline: float) -> bytes:
        if response.status_code >= 400:
            raise FetchFailed(
                f"{url} answered {response.status_code} {response.reason_phrase}; "
                "check that the page exists and is public."
            )
        declared = int(response.headers.get("Content-Length") or 0)
        if declared > self.limits.max_bytes:
            raise self._too_large(url)
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > self.limits.max_bytes:
                raise self._too_large(url)
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("total time limit reached")
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, url: str) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"{url} is larger than web_fetch_max_bytes ({self.limits.max_bytes} bytes); "
            "download it and upload the file, or raise the limit."
        )


def _content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("Content-Type", "")
    return value.split(";", 1)[0].strip().lower()
