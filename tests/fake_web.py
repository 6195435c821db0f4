"""Wire-faithful fakes of the web, served over real HTTP on 127.0.0.1 (nothing outside can be
reached from the test machines):

- FakeWebSite: pages, a PDF behind an extension-less URL, redirects, a 404, a huge body and a
  page that drips bytes slowly.
- FakeSearchProviders: one server speaking each provider's documented API, by path prefix:
  /searxng/search, /brave/res/v1/web/search, /tavily/search, /serper/search,
  /google/customsearch/v1, /bing/v7.0/search, /exa/search. Each checks its key the way the
  real service does and answers in the real response shape.
- FakeYouTube: the watch page (with the player API key), the InnerTube player API (caption
  tracks, title, playability) and the timed-text XML of each track.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fake_servers import serve_handler


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    status: int = 200
    body: bytes | Iterator[bytes] = b""
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


def json_reply(payload: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(payload).encode(), "application/json")


Handler = Callable[[Request], Reply]


@contextmanager
def serve_web(handler: Handler) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (free port); yields the base URL, stops it afterwards."""

    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802
            self.dispatch("GET")

        def do_POST(self) -> None:  # noqa: N802
            self.dispatch("POST")

        def dispatch(self, method: str) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            request = Request(
                method,
                parts.path,
                parse_qs(parts.query),
                {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length) if length else b"",
            )
            reply = handler(request)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if isinstance(reply.body, bytes):
                self.send_header("Content-Length", str(len(reply.body)))
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            pieces = [reply.body] if isinstance(reply.body, bytes) else reply.body
            try:
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (a size or time limit)

        def log_message(self, *args: Any) -> None:
            pass

    with serve_handler(RequestHandler) as url:
        yield url


ARTICLE = """<html><head><title>Mallards of the Northern Marsh</title></head><body>
<nav><a href="/">Home</a> <a href="/shop">Shop the duck store</a></nav>
<main><h1>Mallards</h1>
<p>The northern marsh mallard feeds on duckweed, snails and water beetles at dawn.</p>
<h2>Migration</h2>
<p>Each October the mallards fly south along the Vistula river to winter in Hungary.</p>
</main>
<footer>Copyright Marsh Society. Cookie settings.</footer></body></html>"""


class FakeWebSite:
    """Pages for URL ingestion. ``docs`` is the shared fixtures folder (files served by path)."""

    def __init__(self, docs: Path) -> None:
        self.docs = docs
        self.url = ""
        self.hits: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0  # how many /pause/ requests were served at the same time
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        self.hits.append(request.path)
        path = request.path
        if path.startswith("/pause/"):
            return self._pause(path.rsplit("/", 1)[1])
        if path == "/article":
            return Reply(body=ARTICLE.encode())
        if path == "/download":  # a PDF at a URL that does not say so: the type header does
            return Reply(
                body=(self.docs / "multi_page.pdf").read_bytes(), content_type="application/pdf"
            )
        if path.startswith("/fixture/"):
            name = path.removeprefix("/fixture/")
            return Reply(body=(self.docs / name).read_bytes(), content_type="text/html")
        if path.startswith("/hop/"):  # /hop/3 → /hop/2 → /hop/1 → /hop/0 → /article
            left = int(path.rsplit("/", 1)[1])
            target = "/article" if left == 0 else f"/hop/{left - 1}"
            return Reply(302, headers={"Location": target})
        if path == "/to":  # a redirect to wherever ?url= says
            return Reply(302, headers={"Location": request.query["url"][0]})
        if path == "/huge":
            return Reply(body=b"<p>" + b"duck " * 2_000_000 + b"</p>")
        if path == "/gzip-bomb":  # 50 KB on the wire, 50 MB once decoded
            bomb = gzip.compress(b"\0" * 50_000_000, compresslevel=9)
            return Reply(body=bomb, content_type="text/plain", headers={"Content-Encoding": "gzip"})
        if path == "/endless":  # no Content-Length, never ends
            return Reply(body=_endless(), content_type="text/plain")
        if path == "/slow":
            return Reply(body=_drip(), content_type="text/plain")
        return Reply(404, b"<h1>Not found</h1>")

    def _pause(self, n: str) -> Reply:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(0.5)
        with self.lock:
            self.in_flight -= 1
        return Reply(
            body=f"<title>Pause {n}</title><p>Page {n} about teal number {n}.</p>".encode()
        )


def _endless() -> Iterator[bytes]:
    while True:
        yield b"quack " * 10_000


def _drip() -> Iterator[bytes]:
    for _ in range(600):
        yield b"quack "
        time.sleep(0.1)


@dataclass(frozen=True)
class Hit:
    url: str
    title: str
    snippet: str


class FakeSearchProviders:
    """Every provider's API. ``results`` is what any query finds; ``failing`` lists queries
    answered with a 500; requests are recorded per provider."""

    KEY = "test-key"

    def __init__(self, results: list[Hit]) -> None:
        self.results = results
        self.failing: set[str] = set()
        self.requests: list[tuple[str, Request]] = []

    def __call__(self, request: Request) -> Reply:
        provider = request.path.split("/")[1]
        self.requests.append((provider, request))
        route = getattr(self, f"_{provider}", None)
        if route is None:
            return json_reply({"error": "not found"}, 404)
        return route(request)

    def _query(self, request: Request, name: str) -> str | None:
        if request.method == "POST":
            return request.json().get(name)
        return (request.query.get(name) or [None])[0]

    def _searxng(self, request: Request) -> Reply:
        if (request.query.get("format") or [""])[0] != "json":
            return Reply(403, b"format not allowed")  # SearXNG's answer when JSON is off
        q = self._query(request, "q")
        if q in self.failing:
            return json_reply({"error": "engine failure"}, 500)
        rows = [
            {"url": h.url, "title": h.title, "content": h.snippet, "engine": "fake"}
            for h in self.results
        ]
        return json_reply({"query": q, "number_of_results": len(rows), "results": rows})

    def _brave(self, request: Request) -> Reply:
        if request.headers.get("x-subscription-token") != self.KEY:
            return json_reply(
                {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}, 422
            )
        count = int(request.query["count"][0])
        rows = [
            {"url": h.url, "title": h.title, "description": h.snippet} for h in self.results[:count]
        ]
        return json_reply({"type": "search", "web": {"type": "search", "results": rows}})

    def _tavily(self, request: Request) -> Reply:
        if request.headers.get("authorization") != f"Bearer {self.KEY}":
            return json_reply(
                {"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401
            )
        body = request.json()
        rows = [
            {"url": h.url, "title": h.title, "content": h.snippet, "score": 0.9}
            for h in self.results[: body["max_results"]]
        ]
        return json_reply({"query": body["query"], "results": rows, "response_time": 0.5})

    def _serper(self, request: Request) -> Reply:
        if request.headers.get("x-api-key") != self.KEY:
            return json_reply({"message": "Unauthorized.", "statusCode": 403}, 403)
        body = request.json()
        rows = [
            {"title": h.title, "link": h.url, "snippet": h.snippet, "position": i + 1}
            for i, h in enumerate(self.results[: body["num"]])
        ]
        return json_reply({"searchParameters": {"q": body["q"]}, "organic": rows})

    def _google(self, request: Request) -> Reply:
        if request.query.get("key") != [self.KEY] or request.query.get("cx") != ["engine-1"]:
            return json_reply({"error": {"code": 400, "message": "API key not valid."}}, 400)
        start, num = int(request.query["start"][0]), int(request.query["num"][0])
        if num > 10:
            return json_reply({"error": {"code": 400, "message": "Invalid value"}}, 400)
        rows = [
            {"kind": "customsearch#result", "title": h.title, "link": h.url, "snippet": h.snippet}
            for h in self.results[start - 1 : start - 1 + num]
        ]
        return json_reply(
            {"kind": "customsearch#search", "items": rows}
            if rows
            else {"kind": "customsearch#search"}
        )

    def _bing(self, request: Request) -> Reply:
        if request.headers.get("ocp-apim-subscription-key") != self.KEY:
            return json_reply({"error": {"code": "401", "message": "Access denied"}}, 401)
        count = int(request.query["count"][0])
        rows = [{"name": h.title, "url": h.url, "snippet": h.snippet} for h in self.results[:count]]
        return json_reply({"_type": "SearchResponse", "webPages": {"value": rows}})

    def _exa(self, request: Request) -> Reply:
        if request.headers.get("x-api-key") != self.KEY:
            return json_reply({"error": "Invalid API key"}, 401)
        body = request.json()
        rows = [
            {"id": h.url, "url": h.url, "title": h.title, "text": h.snippet}
            for h in self.results[: body["numResults"]]
        ]
        return json_reply({"requestId": "r1", "results": rows})


class FakeYouTube:
    """Videos by id: title, caption tracks (language, generated?, lines) and playability."""

    API_KEY = "AIzaFakeInnertubeKey"

    def __init__(self) -> None:
        self.url = ""
        self.videos: dict[str, dict[str, Any]] = {
            "dQw4w9WgXcQ": {
                "title": "How Mallards Migrate",
                "tracks": [
                    ("de", True, ["Stockenten ziehen im Oktober nach Süden."]),
                    (
                        "en",
                        False,
                        [
                            (0.0, "Mallards leave the marsh in October."),
                            (4.5, "They follow the Vistula &amp;amp; rest in Hungary."),
                            (75.0, "In March they return to breed."),
                        ],
                    ),
                ],
            },
            "noCaptions1": {"title": "Silent Ducks", "tracks": []},
            "privateVid1": {
                "title": "",
                "tracks": [],
                "status": ("LOGIN_REQUIRED", "This video is private"),
            },
        }
        self.requests: list[Request] = []

    def __call__(self, request: Request) -> Reply:
        self.requests.append(request)
        if request.path == "/watch":
            config = f'ytcfg.set({{"INNERTUBE_API_KEY": "{self.API_KEY}"}});'
            return Reply(body=f"<html><script>{config}</script></html>".encode())
        if request.path == "/youtubei/v1/player":
            if request.query.get("key") != [self.API_KEY]:
                return json_reply({"error": {"code": 400, "message": "API key not valid"}}, 400)
            return json_reply(self._player(request.json()["videoId"]))
        if request.path == "/api/timedtext":
            return self._timedtext(request.query["v"][0], request.query["lang"][0])
        return Reply(404)

    def _player(self, vid: str) -> dict[str, Any]:
        video = self.videos.get(vid)
        if video is None:
            return {"playabilityStatus": {"status": "ERROR", "reason": "Video unavailable"}}
        if "status" in video:
            status, reason = video["status"]
            return {"playabilityStatus": {"status": status, "reason": reason}}
        tracks = [
            {
                "baseUrl": f"{self.url}/api/timedtext?v={vid}&lang={lang}&fmt=srv3",
                "name": {"runs": [{"text": lang}]},
                "languageCode": lang,
                **({"kind": "asr"} if generated else {}),
                "isTranslatable": True,
            }
            for lang, generated, _ in video["tracks"]
        ]
        player: dict[str, Any] = {
            "playabilityStatus": {"status": "OK"},
            "videoDetails": {"videoId": vid, "title": video["title"], "author": "Duck TV"},
        }
        if tracks:
            player["captions"] = {"playerCaptionsTracklistRenderer": {"captionTracks": tracks}}
        return player

    def _timedtext(self, vid: str, lang: str) -> Reply:
        for code, _, lines in self.videos[vid]["tracks"]:
            if code == lang:
                timed = [(i * 3.0, ln) if isinstance(ln, str) else ln for i, ln in enumerate(lines)]
                body = "".join(f'<text start="{s}" dur="3.0">{t}</text>' for s, t in timed)
                xml = f'<?xml version="1.0" encoding="utf-8" ?><transcript>{body}</transcript>'
                return Reply(body=xml.encode(), content_type="text/xml; charset=UTF-8")
        return Reply(404)
