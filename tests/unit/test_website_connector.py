"""Website connectors against a small web site served here on 127.0.0.1 (a real HTTP server
that answers conditional requests with 304 and has a robots.txt): same-site links followed
to a depth, robots.txt obeyed, an unchanged site downloads nothing again, a changed page is
re-indexed, a page gone (404) leaves the KB, a sitemap as the target; over the API,
loopback and metadata addresses are refused unless web_fetch_allowlist names them."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from citewell.errors import UrlBlocked
from citewell.services.connectors import ConnectorSpec
from citewell.types import SearchMode
from tests.connector_helpers import api_connectors, kb_paths


def html(title: str, text: str, *links: str) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    page = f"<html><head><title>{title}</title></head><body><p>{text}</p>{anchors}</body></html>"
    return page.encode()


class Site:
    """Pages by path; each answer's ETag is its bytes' hash; requests are recorded."""

    def __init__(self) -> None:
        self.pages: dict[str, bytes] = {
            "/robots.txt": b"User-agent: *\nDisallow: /docs/private/\n",
            "/docs/": html(
                "Docs",
                "Welcome to the Pelican manual.",
                "guide.html",
                "deep/a.html",
                "private/secret.html",
                "/outside.html",
                "http://elsewhere.invalid/x.html",
            ),
            "/docs/guide.html": html("Guide", "Install the Quokka toolkit.", "deep/b.html"),
            "/docs/deep/a.html": html("A", "Section A covers the Heron method."),
            "/docs/deep/b.html": html("B", "Section B covers the Ibis method.", "c.html"),
            "/docs/deep/c.html": html("C", "Too deep to be reached."),
            "/docs/private/secret.html": html("Secret", "Robots keep this out."),
            "/outside.html": html("Outside", "Not under the start URL."),
        }
        self.log: list[tuple[str, int]] = []

    def sitemap(self, base: str) -> None:
        urls = "".join(
            f"<url><loc>{base}{p}</loc></url>" for p in ("/docs/guide.html", "/docs/deep/c.html")
        )
        self.pages["/sitemap.xml"] = (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{urls}</urlset>"
        ).encode()


@pytest.fixture
def site() -> Iterator[tuple[str, Site]]:
    state = Site()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = state.pages.get(self.path)
            if body is None:
                return self._answer(404, b"")
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            if self.headers.get("If-None-Match") == etag:
                return self._answer(304, b"", etag)
            return self._answer(200, body, etag)

        def _answer(self, status: int, body: bytes, etag: str = "") -> None:
            state.log.append((self.path, status))
            self.send_response(status)
            kind = "text/plain" if self.path.endswith(".txt") else "text/html"
            self.send_header(
                "Content-Type", "application/xml" if self.path.endswith(".xml") else kind
            )
            if etag:
                self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        thread.join(timeout=10)


def test_a_site_is_crawled_to_a_depth_and_kept_current(site, tmp_path: Path, onnx_embedder):
    url, state = site
    app, service = api_connectors(tmp_path, onnx_embedder, web_fetch_allowlist="127.0.0.1")
    made = service.create(
        "kb", ConnectorSpec("website", f"{url}/docs/", options={"depth": "2"}, name="docs")
    )
    first = app.connectors.run(made.id)
    assert (first.added, first.failed) == (4, 0), first.errors
    assert kb_paths(app) == ["deep/a.html", "deep/b.html", "guide.html", "index.html"]
    assert ("/docs/private/secret.html", 200) not in state.log  # robots.txt said no
    (hit,) = app.search("Quokka toolkit", ["kb"], SearchMode.BM25, 1)
    assert hit.url == f"{url}/docs/guide.html"  # citations link to the page

    state.log.clear()
    again = app.connectors.run(made.id)
    assert (again.unchanged, again.chunks_embedded) == (4, 0)
    assert {status for path, status in state.log if path != "/robots.txt"} == {304}

    state.pages["/docs/guide.html"] = html("Guide", "Install the Wombat toolkit.", "deep/b.html")
    del state.pages["/docs/deep/a.html"]
    changed = app.connectors.run(made.id)
    assert (changed.updated, changed.deleted) == (1, 1)
    assert kb_paths(app) == ["deep/b.html", "guide.html", "index.html"]
    assert "Wombat" in app.search("toolkit", ["kb"], SearchMode.BM25, 1)[0].chunk.text
    assert not app.check(recall_samples=0).problems
    app.close()


def test_a_sitemap_lists_the_pages(site, tmp_path: Path, onnx_embedder) -> None:
    url, state = site
    state.sitemap(url)
    app, service = api_connectors(tmp_path, onnx_embedder, web_fetch_allowlist="127.0.0.1")
    made = service.create("kb", ConnectorSpec("website", f"{url}/sitemap.xml", name="map"))
    assert app.connectors.run(made.id).added == 2
    assert kb_paths(app) == ["docs/deep/c.html", "docs/guide.html"]
    app.close()


def test_loopback_and_metadata_addresses_are_refused(site, tmp_path: Path, onnx_embedder):
    url, _ = site
    app, service = api_connectors(tmp_path, onnx_embedder)  # no allow-list
    for target in (f"{url}/docs/", "http://169.254.169.254/latest/meta-data/"):
        with pytest.raises(UrlBlocked):
            service.create("kb", ConnectorSpec("website", target, name=target[-12:]))
    app.close()
