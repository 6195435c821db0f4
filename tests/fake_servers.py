"""Wire-faithful fakes of services that cannot run here, served over real HTTP on 127.0.0.1.

FakeEmbeddingServer speaks OpenAI's POST /v1/embeddings and Ollama's POST /api/embed;
FakeRerankServer speaks Cohere/Jina's POST /v1/rerank and TEI's POST /rerank. They record
every request so tests can assert what Citewell sent. Vectors come from FakeHashEmbedder.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from citewell.retrieval.tokenize import tokenize
from citewell.testing.fakes import FakeHashEmbedder


class FakeService:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail_next: list[int] = []  # status codes to answer before behaving
        self.embedder = FakeHashEmbedder(32)

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.requests.append((path, body))
        if self.fail_next:
            return self.fail_next.pop(0), {"error": {"message": "injected failure"}}
        if path == "/v1/embeddings":
            vectors = self.embedder.embed(body["input"])
            data = [
                {"object": "embedding", "index": i, "embedding": v.tolist()}
                for i, v in enumerate(vectors)
            ]
            data.reverse()  # clients must order by index, not by position
            return 200, {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        if path == "/api/embed":
            vectors = self.embedder.embed(body["input"])
            return 200, {"model": body["model"], "embeddings": vectors.tolist()}
        if path in ("/v1/rerank", "/rerank"):
            query = set(tokenize(body["query"]))
            docs = body.get("documents") or body.get("texts")
            scores = [len(query & set(tokenize(d))) / (1 + len(query)) for d in docs]
            if path == "/rerank":  # TEI
                return 200, [{"index": i, "score": s} for i, s in enumerate(scores)]
            results = sorted(
                ({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
                key=lambda r: -r["relevance_score"],
            )
            return 200, {"id": "rerank-1", "results": results}
        return 404, {"error": "not found"}


@contextmanager
def serve(service: FakeService) -> Iterator[str]:
    """Run ``service`` on 127.0.0.1 (free port); yields the base URL, stops it afterwards."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            status, payload = service.handle(self.path, json.loads(self.rfile.read(length)))
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
