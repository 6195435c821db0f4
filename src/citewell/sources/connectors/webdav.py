"""WebDAV folders (Nextcloud, ownCloud, SharePoint's WebDAV, Apache mod_dav, wsgidav): listed
with PROPFIND one level at a time (servers often refuse ``Depth: infinity``), each file's
version its ETag (else its size and last-modified time), read with GET. Every connection
made for a connector created over the API goes through the URL fetches' address guard
(loopback, private and metadata addresses only where web_fetch_allowlist allows them).
Credentials: ``username`` and ``token`` (a password or app password), sent as HTTP Basic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from urllib.parse import quote, unquote, urljoin, urlsplit

import httpx
from defusedxml import ElementTree  # type: ignore[import-untyped]

from citewell.errors import FetchFailed, InvalidInput, PayloadTooLarge
from citewell.fetch.guard import AddressGuard, GuardedTransport
from citewell.sources.connectors.entries import Listing, SyncEntry, SyncRequest
from citewell.sources.connectors.filters import PathFilter
from citewell.tracing.client import traced

DAV = "{DAV:}"
PROPFIND = (
    b'<?xml version="1.0" encoding="utf-8"?><d:propfind xmlns:d="DAV:"><d:prop>'
    b"<d:resourcetype/><d:getetag/><d:getcontentlength/><d:getlastmodified/>"
    b"</d:prop></d:propfind>"
)
MAX_DEPTH = 32
MAX_ENTRIES = 200_000
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


def base_url(target: str) -> str:
    """The folder's URL, ending in '/'; refuses what is not an http(s) URL of a host."""
    parts = urlsplit(target)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"{target!r}: a WebDAV folder is an http or https URL.")
    if parts.username or parts.password:
        raise InvalidInput(
            "Put the user name and password in the connector's credentials (username, "
            "token), not in the URL: URLs are shown and logged."
        )
    return target if target.endswith("/") else target + "/"


class WebDavSource:
    def __init__(self, guard: AddressGuard, max_bytes: int) -> None:
        self.guard, self.max_bytes = guard, max_bytes

    def check(self, request: SyncRequest) -> None:
        url = base_url(request.target)
        if not request.trusted:  # the local operator may reach any host
            self.guard.resolve(urlsplit(url).hostname or "", urlsplit(url).port or 443)

    def listing(self, request: SyncRequest) -> Listing:
        self.check(request)
        root = base_url(request.target)
        options = request.options
        wanted = PathFilter(options.get("include", ""), options.get("exclude", ""))
        with self._client(request) as client:
            found = list(self._walk(client, root, wanted))
        entries = (
            SyncEntry(path, version, self._reader(request, root, path)) for path, version in found
        )
        return Listing(entries)

    def _client(self, request: SyncRequest) -> httpx.Client:
        user, token = request.credentials.get("username", ""), request.credentials.get("token", "")
        return httpx.Client(
            auth=httpx.BasicAuth(user, token) if user or token else None,
            transport=traced(None if request.trusted else GuardedTransport(self.guard)),
            timeout=TIMEOUT,
            follow_redirects=False,  # a redirect could lead anywhere: the folder URL is exact
        )

    def _walk(
        self, client: httpx.Client, root: str, wanted: PathFilter
    ) -> Iterator[tuple[str, str]]:
        """(path under the root, version) of every file, folder by folder."""
        folders, seen = [""], 0
        while folders:
            folder = folders.pop()
            for path, is_folder, version in self._list(client, root, folder):
                seen += 1
                if seen > MAX_ENTRIES:
                    raise FetchFailed(f"{root} holds more than {MAX_ENTRIES:,} entries.")
                if is_folder and path.count("/") < MAX_DEPTH and wanted.folder(path):
                    folders.append(path)
                elif not is_folder and wanted.file(path):
                    yield path, version

    def _list(self, client: httpx.Client, root: str, folder: str) -> list[tuple[str, bool, str]]:
        """The entries right inside ``folder``: (path, is a folder, version)."""
        url = urljoin(root, quote(folder + "/" if folder else ""))
        response = _request(client, "PROPFIND", url, PROPFIND, {"Depth": "1"})
        if response.status_code != 207:
            raise FetchFailed(f"PROPFIND {url} answered {response.status_code}, not 207.")
        try:
            tree = ElementTree.fromstring(response.content)
        except ElementTree.ParseError as exc:
            raise FetchFailed(f"{url} sent a listing that is not valid XML: {exc}") from exc
        base = unquote(urlsplit(root).path)
        found = []
        for item in tree.iter(DAV + "response"):
            href = unquote(urlsplit(item.findtext(DAV + "href", "")).path)
            if not href.startswith(base):
                continue  # another place than the folder: not followed
            path = href[len(base) :].strip("/")
            if path == folder or not path or ".." in path.split("/"):
                continue
            found.append((path, *_properties(item)))
        return found

    def _reader(self, request: SyncRequest, root: str, path: str) -> Callable[[], bytes]:
        def read() -> bytes:
            with self._client(request) as client:
                url = urljoin(root, quote(path))
                with client.stream("GET", url) as response:
                    if response.status_code != 200:
                        raise FetchFailed(f"GET {url} answered {response.status_code}.")
                    data = bytearray()
                    for part in response.iter_bytes():
                        data += part
                        if len(data) > self.max_bytes:
                            raise PayloadTooLarge(f"{path} is larger than {self.max_bytes} bytes.")
                    return bytes(data)

        return read


def _properties(item: object) -> tuple[bool, str]:
    """(is a folder, version) from one PROPFIND response element."""
    prop = item.find(f"{DAV}propstat/{DAV}prop")  # type: ignore[attr-defined]
    if prop is None:
        return False, ""
    is_folder = prop.find(f"{DAV}resourcetype/{DAV}collection") is not None
    etag = (prop.findtext(DAV + "getetag") or "").strip().removeprefix("W/").strip('"')
    size = prop.findtext(DAV + "getcontentlength") or ""
    modified = prop.findtext(DAV + "getlastmodified") or ""
    return is_folder, etag or f"{size}:{modified}"


def _request(
    client: httpx.Client, method: str, url: str, body: bytes, headers: dict[str, str]
) -> httpx.Response:
    try:
        response = client.request(method, url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise FetchFailed(f"{method} {url} failed: {exc}") from exc
    if response.status_code in (401, 403):
        raise FetchFailed(
            f"{url} refused the connector ({response.status_code}): check its credentials "
            "(username and token: a password or an app password)."
        )
    return response
