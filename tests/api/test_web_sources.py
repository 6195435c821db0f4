"""URLs, web search and YouTube through the real server, against fakes of the web
(tests/fake_web.py) on 127.0.0.1, which the server is told it may reach (web_fetch_allowlist)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from citewell.config import Settings
from tests.api.conftest import assert_citations_resolve, run_server
from tests.fake_servers import FakeLLMService
from tests.fake_web import FakeSearchProviders, FakeWebSite, FakeYouTube, Hit, serve_web

pytestmark = pytest.mark.api

QUESTION = "Where do the mallards winter?"


@dataclass
class Web:
    url: str  # the Citewell server
    site: str  # the fake web site
    pages: FakeWebSite
    search: FakeSearchProviders
    youtube: FakeYouTube
    llm: FakeLLMService

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)


@pytest.fixture(scope="module")
def web(tmp_path_factory, onnx_embedder, shared_docs, fake_llm) -> Iterator[Web]:
    site, search, youtube = FakeWebSite(shared_docs), FakeSearchProviders([]), FakeYouTube()
    with serve_web(site) as site_url, serve_web(search) as search_url, serve_web(youtube) as yt:
        youtube.url = yt
        search.results = [
            Hit(f"{site_url}/article", "Mallards", "Mallards of the marsh"),
            Hit(f"{site_url}/missing", "Gone", "A page that is not there"),
            Hit("http://169.254.169.254/latest/meta-data/", "Metadata", "Not for us"),
            Hit(f"{site_url}/fixture/wiki_duck.html", "Duck", "Wikipedia on ducks"),
        ]
        settings = Settings.load(
            data_dir=tmp_path_factory.mktemp("web-data"),
            auth="none",
            llm_base_url=fake_llm.url + "/v1",
            web_fetch_allowlist="127.0.0.1",
            web_fetch_timeout=3,
            web_fetch_max_bytes=1_000_000,
            web_search_engine="searxng",
            searxng_query_url=search_url + "/searxng/search",
            web_search_result_count=4,
            youtube_url=yt,
        )
        with run_server(settings, onnx_embedder) as url:
            yield Web(url, site_url, site, search, youtube, fake_llm)


def post(web: Web, path: str, body: dict) -> httpx.Response:
    with web.client() as client:
        return client.post(f"/api/v1/retrieval/{path}", json=body)


# --- one URL ------------------------------------------------------------------------------
def test_a_page_is_fetched_cleaned_and_searchable(web):
    response = post(web, "process/web", {"url": f"{web.site}/article"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] is True and body["collection_name"] == "web"
    assert body["title"] == "Mallards of the Northern Marsh"
    assert body["file"]["name"] == "Mallards of the Northern Marsh"
    assert body["file"]["source"] == "url" and body["file"]["url"] == f"{web.site}/article"
    with web.client() as client:
        text = client.get(f"/api/v1/files/{body['file']['id']}/text").json()["text"]
        hits = client.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": ["web"], "query": QUESTION, "k": 1},
        ).json()
    assert "# Mallards" in text and "## Migration" in text
    assert "duck store" not in text and "Cookie" not in text  # navigation and footer dropped
    assert "Hungary" in hits["documents"][0][0]
    assert hits["metadatas"][0][0]["source"] == f"{web.site}/article"


def test_a_pdf_url_goes_to_the_pdf_loader(web):
    response = post(
        web, "process/web", {"url": f"{web.site}/download", "collection_name": "papers"}
    )
    assert response.status_code == 200, response.text
    file = response.json()["file"]
    assert file["mime_type"] == "application/pdf" and file["chunk_count"] > 0
    with web.client() as client:
        hits = client.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": ["papers"], "query": "page", "k": 5},
        ).json()
    assert {m["page"] for m in hits["metadatas"][0]} - {None}  # page numbers kept


def test_redirects_are_followed_up_to_the_limit(web):
    ok = post(web, "process/web", {"url": f"{web.site}/hop/2", "collection_name": "hops"})
    assert ok.status_code == 200 and ok.json()["file"]["url"] == f"{web.site}/article"
    too_many = post(web, "process/web", {"url": f"{web.site}/hop/9"})
    assert too_many.status_code == 502
    assert too_many.json()["code"] == "fetch_failed" and "redirects" in too_many.json()["detail"]


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/missing", 502, "fetch_failed"),
        ("/huge", 413, "payload_too_large"),
        ("/endless", 413, "payload_too_large"),
        ("/gzip-bomb", 413, "payload_too_large"),
        ("/slow", 504, "fetch_timeout"),
    ],
)
def test_bad_pages_get_typed_errors(web, path, status, code):
    response = post(web, "process/web", {"url": web.site + path})
    assert response.status_code == status, response.text
    assert response.json()["code"] == code


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.org/a", "not a url", "http://[bad", "http://x/\x00"],
)
def test_only_http_urls_are_accepted(web, url):
    response = post(web, "process/web", {"url": url})
    assert response.status_code == 400 and response.json()["code"] == "invalid_input"


# --- the SSRF guard -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded(tmp_path_factory, onnx_embedder, shared_docs) -> Iterator[tuple[str, str]]:
    """A server trusting only the name 'localhost', not any address."""
    with serve_web(FakeWebSite(shared_docs)) as site:
        settings = Settings.load(
            data_dir=tmp_path_factory.mktemp("guarded"),
            auth="none",
            web_fetch_allowlist="localhost",
        )
        with run_server(settings, onnx_embedder) as url:
            yield url, site


def _blocked_urls(site: str) -> list[str]:
    port = site.rsplit(":", 1)[1]
    local = f"http://localhost:{port}"
    return [
        f"{site}/article",  # 127.0.0.1
        f"http://[::1]:{port}/article",
        f"http://2130706433:{port}/article",  # 127.0.0.1 as one decimal number
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata; never connected to
        "http://10.255.255.1/",
        f"{local}/to?url={site}/article",  # an allowed host redirecting to a refused address
    ]


def test_private_addresses_are_refused(guarded):
    url, site = guarded
    with httpx.Client(base_url=url, timeout=60) as client:
        for target in _blocked_urls(site):
            response = client.post("/api/v1/retrieval/process/web", json={"url": target})
            assert response.status_code == 403, (target, response.text)
            assert response.json()["code"] == "url_blocked"
            assert "web_fetch_allowlist" in response.json()["detail"]
        port = site.rsplit(":", 1)[1]
        allowed = client.post(
            "/api/v1/retrieval/process/web", json={"url": f"http://localhost:{port}/article"}
        )
        assert allowed.status_code == 200, allowed.text


# --- web search ---------------------------------------------------------------------------
def test_web_search_stores_every_page_it_can_and_reports_the_rest(web):
    response = post(web, "process/web_search", {"queries": ["mallard migration"]})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["collection_name"] == "web-search" and body["loaded_count"] == 2
    by_link = {item["link"]: item for item in body["items"]}
    assert by_link[f"{web.site}/article"]["file_id"]
    assert by_link[f"{web.site}/fixture/wiki_duck.html"]["file_id"]
    assert "404" in by_link[f"{web.site}/missing"]["error"]
    assert "private" in by_link["http://169.254.169.254/latest/meta-data/"]["error"]
    # the article is the file fetched by an earlier test (same bytes: stored once)
    assert {f["url"] for f in body["files"]} == {
        f"{web.site}/article",
        f"{web.site}/fixture/wiki_duck.html",
    }
    provider, request = web.search.requests[-1]
    assert provider == "searxng" and request.query["q"] == ["mallard migration"]


def test_result_pages_are_fetched_at_the_same_time(web):
    saved = web.search.results
    web.search.results = [Hit(f"{web.site}/pause/{i}", f"Pause {i}", "") for i in range(4)]
    try:
        response = post(web, "process/web_search", {"query": "teal", "collection_name": "teal"})
    finally:
        web.search.results = saved
    assert response.json()["loaded_count"] == 4
    assert web.pages.most_in_flight >= 2


def test_web_search_with_every_query_failing_is_a_502(web):
    web.search.failing = {"broken"}
    try:
        response = post(web, "process/web_search", {"query": "broken"})
    finally:
        web.search.failing = set()
    assert response.status_code == 502 and response.json()["code"] == "web_search_failed"


def test_web_search_needs_a_query(web):
    assert post(web, "process/web_search", {"queries": []}).status_code == 400


# --- YouTube ------------------------------------------------------------------------------
def test_a_video_transcript_is_a_source_named_by_its_title(web):
    response = post(web, "process/youtube", {"url": "https://youtu.be/dQw4w9WgXcQ?t=3"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["title"] == "How Mallards Migrate" and body["file"]["source"] == "youtube"
    assert body["url"] == "https://www.youtube.com/watch?v=dQw4w9WgXcQ"
    with web.client() as client:
        text = client.get(f"/api/v1/files/{body['file']['id']}/text").json()["text"]
    assert text.startswith("# How Mallards Migrate")
    assert "[0:00] Mallards leave the marsh" in text and "Vistula & rest" in text
    assert "[1:15] In March" in text  # a new timestamped paragraph after a minute
    player = next(r for r in web.youtube.requests if r.path == "/youtubei/v1/player")
    assert player.json()["videoId"] == "dQw4w9WgXcQ"


def test_transcript_language_preference(web):
    response = post(
        web,
        "process/youtube",
        {"url": "https://www.youtube.com/shorts/dQw4w9WgXcQ", "language": ["de", "en"]},
    )
    with web.client() as client:
        text = client.get(f"/api/v1/files/{response.json()['file']['id']}/text").json()["text"]
    assert "Stockenten" in text


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("https://www.youtube.com/watch?v=noCaptions1", "no transcript"),
        ("https://www.youtube.com/watch?v=privateVid1", "private"),
        ("https://www.youtube.com/watch?v=missingVid1", "unavailable"),
    ],
)
def test_no_transcript_is_a_clear_422(web, url, match):
    response = post(web, "process/youtube", {"url": url})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "no_transcript" and match in response.json()["detail"]


def test_youtube_endpoint_wants_a_video_url(web):
    response = post(web, "process/youtube", {"url": f"{web.site}/article"})
    assert response.status_code == 400 and "YouTube" in response.json()["detail"]


# --- in chat ------------------------------------------------------------------------------
def test_a_hash_url_in_a_message_is_fetched_and_cited(web):
    message = f"#{web.site}/article {QUESTION}"
    with web.client() as client:
        response = client.post(
            "/api/v1/rag/chat/completions",
            json={"model": "llama3", "messages": [{"role": "user", "content": message}]},
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert_citations_resolve(body)
    assert body["sources"] and all(
        s["metadata"]["url"] == f"{web.site}/article" for s in body["sources"]
    )
    sent = web.llm.requests[-1][1]["messages"]
    context = "\n".join(m["content"] for m in sent)
    assert (
        "Hungary" in context and '<source id="1" name="Mallards of the Northern Marsh">' in context
    )
    assert f"#{web.site}" not in context  # the '#' was for Citewell; the LLM sees the URL
    assert f"{web.site}/article {QUESTION}" in context


def test_a_hash_url_that_fails_is_a_warning(web):
    message = f"#{web.site}/missing {QUESTION}"
    with web.client() as client:
        body = client.post(
            "/api/v1/rag/chat/completions",
            json={"model": "llama3", "messages": [{"role": "user", "content": message}]},
        ).json()
    assert any("404" in w for w in body["warnings"])


def test_chat_with_web_search_cites_the_pages(web):
    with web.client() as client:
        body = client.post(
            "/api/v1/rag/chat/completions",
            json={
                "model": "llama3",
                "messages": [{"role": "user", "content": QUESTION}],
                "features": {"web_search": True},
            },
        ).json()
    assert_citations_resolve(body)
    urls = {s["metadata"]["url"] for s in body["sources"]}
    assert urls and urls <= {f"{web.site}/article", f"{web.site}/fixture/wiki_duck.html"}
    assert any("404" in w for w in body["warnings"])  # the dead result, reported not fatal


NATIVE_CHAT = {
    "model": "llama3",
    "messages": [{"role": "user", "content": QUESTION}],
    "function_calling": "native",
}


def test_the_web_tools_search_and_fetch_as_the_model_asks(web):
    """Native function calling with a web search engine: search_web and fetch_url are
    offered; what they find is cited like any source, and a refused URL is the model's
    error to read, not a failed request."""
    web.llm.tool_script = [
        [
            ("search_web", {"query": "mallard migration", "count": 2}),
            ("fetch_url", {"url": f"{web.site}/article"}),
            ("fetch_url", {"url": "http://169.254.169.254/latest/meta-data/"}),
        ]
    ]
    asked = len(web.llm.requests)
    try:
        with web.client() as client:
            body = client.post("/v1/chat/completions", json=NATIVE_CHAT).json()
    finally:
        web.llm.tool_script = []
    offered = {t["function"]["name"] for t in web.llm.requests[asked][1]["tools"]}
    assert {"search_web", "fetch_url", "query_knowledge_files"} <= offered
    results = [
        json.loads(m["content"]) for m in web.llm.requests[-1][1]["messages"] if m["role"] == "tool"
    ]
    found, fetched, refused = results
    assert found and all(hit["source"].startswith(web.site) for hit in found)
    assert fetched["title"] and "Hungary" in fetched["content"]
    assert "error" in refused
    urls = {s["metadata"]["url"] for s in body["sources"]}
    assert f"{web.site}/article" in urls
    assert_citations_resolve(body)


def test_tool_web_domains_bound_what_the_model_may_fetch(tmp_path, onnx_embedder, fake_llm, web):
    """A document can ask the model to fetch a URL carrying the reader's data (issue 45):
    with tool_web_domains set, fetch_url and search_web's result pages stay inside it,
    and a refused URL is the model's error to read."""
    search = FakeSearchProviders([Hit(f"{web.site}/article", "Mallards", "Of the marsh")])
    with serve_web(search) as search_url:
        settings = Settings.load(
            data_dir=tmp_path,
            auth="none",
            llm_base_url=fake_llm.url + "/v1",
            web_fetch_allowlist="127.0.0.1",
            web_search_engine="searxng",
            searxng_query_url=search_url + "/searxng/search",
            tool_web_domains="example.org",
        )
        fake_llm.tool_script = [
            [
                ("fetch_url", {"url": f"{web.site}/article?secret=alice-salary"}),
                ("search_web", {"query": "mallard migration"}),
            ]
        ]
        try:
            with run_server(settings, onnx_embedder) as url, httpx.Client(base_url=url) as client:
                body = client.post("/v1/chat/completions", json=NATIVE_CHAT, timeout=120)
                assert body.status_code == 200, body.text
                kbs = client.get("/api/v1/knowledge").json()
        finally:
            fake_llm.tool_script = []
    messages = fake_llm.requests[-1][1]["messages"]
    refused, searched = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    assert "tool_web_domains" in refused["error"]
    assert searched == []  # the only result lies outside: not fetched, nothing found
    assert all(kb["file_count"] == 0 for kb in kbs)  # nothing was fetched into a KB
