"""Wire-faithful fakes of services that cannot run here, served over real HTTP on 127.0.0.1.

FakeEmbeddingServer speaks OpenAI's POST /v1/embeddings and Ollama's POST /api/embed;
FakeRerankServer speaks Cohere/Jina's POST /v1/rerank and TEI's POST /rerank;
FakeLLMService an OpenAI-compatible chat server; FakeOllamaChat Ollama's native /api/chat.
They record every request so tests can assert what Citewell sent. Vectors come from
FakeHashEmbedder.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from citewell.retrieval.tokenize import tokenize
from citewell.testing.fakes import FakeHashEmbedder


class FakeService:
    def __init__(self, dimension: int = 32, delay: float = 0.0) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.headers_seen: list[dict[str, str]] = []  # of each POST, as sent
        self.fail_next: list[int] = []  # status codes to answer before behaving
        self.embedder = FakeHashEmbedder(dimension)
        self.delay = delay  # seconds each request takes, like a busy model server

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.requests.append((path, body))
        time.sleep(self.delay)
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
            service.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
            self.answer(*service.handle(self.path, json.loads(self.rfile.read(length))))

        def do_GET(self) -> None:  # noqa: N802
            handler = getattr(service, "handle_get", None)
            self.answer(*(handler(self.path) if handler else (404, {"error": "not found"})))

        def answer(self, status: int, payload: Any) -> None:
            if hasattr(payload, "events"):  # a streamed body
                self.send_response(status)
                kind = getattr(payload, "content_type", "text/event-stream")
                self.send_header("Content-Type", kind)
                self.end_headers()
                for event in payload.events():
                    self.wfile.write(event)
                    self.wfile.flush()
                return
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    with serve_handler(Handler) as url:
        yield url


@contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (free port) in a thread; yields the base URL and stops
    the server afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class FakeLLMService(FakeService):
    """A wire-faithful fake of an OpenAI-compatible chat server (what Ollama, vLLM or
    llama.cpp serve). Query-generation prompts get ``queries_reply``; other prompts get
    ``reply``. Unknown models get 404, as real servers answer."""

    models = ("fake-llm", "gpt-3.5-turbo", "llama3")

    def __init__(self) -> None:
        super().__init__()
        self.reply = "Ducks eat plants and small animals [1]."
        self.queries_reply = '{"queries": ["duck diet"]}'
        # Planned tool calls: one list of (name, arguments) per model turn, made in turn
        # while their tools are offered; ``always_call`` on every turn (to run into limits).
        self.tool_script: list[list[tuple[str, dict[str, Any]]]] = []
        self.always_call: tuple[str, dict[str, Any]] | None = None

    def planned_calls(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        offered = {t["function"]["name"] for t in body.get("tools") or []}
        turn = [self.always_call] if self.always_call else []
        if self.tool_script and all(name in offered for name, _ in self.tool_script[0]):
            turn = self.tool_script.pop(0)
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return [
            {
                "id": f"call_plan_{done + i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(turn)
            if name in offered
        ]

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path == "/v1/chat/completions":
            self.requests.append((path, body))
            if self.fail_next:
                return self.fail_next.pop(0), {"error": {"message": "injected failure"}}
            if body["model"] not in self.models:
                return 404, {"error": {"message": f"model {body['model']} not found"}}
            prompt = "\n".join(m["content"] or "" for m in body["messages"])
            text = self.queries_reply if "short search queries" in prompt else self.reply
            if "<document>" in prompt:  # a chunk context or a summary: name the document
                text = situate(prompt)
            calls = self.planned_calls(body) if "short search queries" not in prompt else []
            if not calls and not self.tool_script and self.always_call is None:
                calls = [c for c in [tool_call(body)] if c is not None]
            if body.get("stream"):
                return 200, StreamBody(text, body["model"], calls)
            if calls:
                return 200, tool_call_completion(body["model"], calls)
            return 200, {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 1,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt) // 4,
                    "completion_tokens": 9,
                    "total_tokens": len(prompt) // 4 + 9,
                },
            }
        return super().handle(path, body)

    def handle_get(self, path: str) -> tuple[int, Any]:
        if path == "/v1/models":
            return 200, {
                "object": "list",
                "data": [
                    {"id": m, "object": "model", "created": 1, "owned_by": "fake"}
                    for m in self.models
                ],
            }
        return 404, {"error": "not found"}


def situate(prompt: str) -> str:
    """What a model asked for a chunk's context (or a summary) might say: the document's
    first line, which Citewell's contextual prompts put right after <document>."""
    first = prompt.split("<document>", 1)[1].strip().splitlines()[0].lstrip("# ")
    kind = "chunk" if "<chunk>" in prompt else "document"
    return f"This {kind} is from the document titled {first}."


def tool_call(body: dict[str, Any]) -> dict[str, Any] | None:
    """What a tool-calling model does: given tools and no tool result yet, it calls the first
    tool (arguments: the last user message as 'query'); after a tool result, it answers."""
    tools = body.get("tools") or []
    if not tools or body["messages"][-1]["role"] == "tool":
        return None
    question = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    return {
        "id": "call_fake_1",
        "type": "function",
        "function": {
            "name": tools[0]["function"]["name"],
            "arguments": json.dumps({"query": question[-200:]}),
        },
    }


def tool_call_completion(model: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": calls},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


class StreamBody:
    """An SSE body: one chunk per word (or a tool call in two pieces, as OpenAI streams it),
    then a finish chunk, a usage chunk and [DONE]."""

    def __init__(self, text: str, model: str, calls: list[dict[str, Any]] | None = None) -> None:
        self.text, self.model, self.calls = text, model, calls or []

    def events(self) -> list[bytes]:
        def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            chunk = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": self.model,
                "choices": choices,
                **extra,
            }
            return f"data: {json.dumps(chunk)}\n\n".encode()

        words = [] if self.calls else self.text.split(" ")
        out = [
            event(
                [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
            )
        ]
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            out.append(event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}]))
        for index, call in enumerate(self.calls):
            function = call["function"]
            first = {**call, "index": index, "function": {"name": function["name"]}}
            rest = {"index": index, "function": {"arguments": function["arguments"]}}
            for piece in (first, rest):
                delta = {"tool_calls": [piece]}
                out.append(event([{"index": 0, "delta": delta, "finish_reason": None}]))
        finish = "tool_calls" if self.calls else "stop"
        out.append(event([{"index": 0, "delta": {}, "finish_reason": finish}]))
        out.append(
            event(
                [],
                usage={
                    "prompt_tokens": 10,
                    "completion_tokens": len(words),
                    "total_tokens": 10 + len(words),
                },
            )
        )
        out.append(b"data: [DONE]\n\n")
        return out


class FakeOllamaChat(FakeService):
    """A wire-faithful fake of Ollama's native chat API: POST /api/chat (JSON, or NDJSON when
    streaming), GET /api/tags. Like Ollama it keeps only the last ``num_ctx`` tokens of the
    prompt (2048 when the request does not say; a word counts as a token here), and its
    reply says which marker words the model could still see."""

    models = ("llama3.2:3b", "qwen2.5:7b")
    DEFAULT_NUM_CTX = 2048

    def __init__(self) -> None:
        super().__init__()
        self.markers: tuple[str, ...] = ()
        self.tool_call: dict[str, Any] | None = None  # a call to make when tools are offered

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.requests.append((path, body))
        if path != "/api/chat":
            return 404, {"error": "not found"}
        if body["model"] not in self.models:
            return 404, {"error": f"model '{body['model']}' not found"}
        words = " ".join(m.get("content") or "" for m in body["messages"]).split()
        kept = words[-int(body.get("options", {}).get("num_ctx", self.DEFAULT_NUM_CTX)) :]
        seen = [m for m in self.markers if m in kept]
        message: dict[str, Any] = {"role": "assistant", "content": f"I see {' '.join(seen)} [1]."}
        if self.tool_call and body.get("tools"):
            message = {"role": "assistant", "content": "", "tool_calls": [self.tool_call]}
        final = {"done": True, "done_reason": "stop", "prompt_eval_count": len(kept)}
        final["eval_count"] = len(message["content"].split())
        if body.get("stream"):
            return 200, NdjsonBody(body["model"], message, final)
        return 200, {"model": body["model"], "message": message, **final}

    def handle_get(self, path: str) -> tuple[int, Any]:
        if path == "/api/tags":
            return 200, {"models": [{"name": m, "model": m} for m in self.models]}
        return 404, {"error": "not found"}


class NdjsonBody:
    """Ollama's streamed answer: a line per word, then a done line with the counts."""

    content_type = "application/x-ndjson"

    def __init__(self, model: str, message: dict[str, Any], final: dict[str, Any]) -> None:
        self.model, self.message, self.final = model, message, final

    def events(self) -> list[bytes]:
        def line(message: dict[str, Any], **extra: Any) -> bytes:
            return (json.dumps({"model": self.model, "message": message, **extra}) + "\n").encode()

        words = self.message["content"].split(" ") if self.message["content"] else []
        out = [
            line({"role": "assistant", "content": w if i == 0 else " " + w}, done=False)
            for i, w in enumerate(words)
        ]
        if self.message.get("tool_calls"):
            out.append(line(self.message, done=False))
        out.append(line({"role": "assistant", "content": ""}, **self.final))
        return out
