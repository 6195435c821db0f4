"""What the web framework costs a request, without a network or a client: the app is called
as an ASGI callable in this process, per route, against the same search called directly.

Needs a SciFact data dir (``--data-dir``; ingested by ``citewell eval`` or
benchmarks/query_latency.py). A user ``bench`` with read access to the SciFact KB and a key
for it are added. Each route is called ``--calls`` times after 300 untimed calls; the query
is the same every time, so after the first call the query embedding comes from the cache
and what is measured is the search plus everything around it. Reported per call: wall
time and CPU time of this process (all threads: the search's keyword half runs in a thread
of its own).

    .venv/bin/python -m benchmarks.lab.request_cost --data-dir /tmp/scifact
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import open_scifact_index  # noqa: E402
from benchmarks.serving import bench_key  # noqa: E402
from citewell.api.app import create_app  # noqa: E402
from citewell.auth.access import Access  # noqa: E402
from citewell.config import Settings  # noqa: E402
from citewell.engine.scoped import Scoped  # noqa: E402

QUERY = "cancer cells"


def asgi_call(app: Any, method: str, path: str, key: str, body: bytes) -> Callable[[], Any]:
    headers = [
        (b"host", b"127.0.0.1"),
        (b"authorization", f"Bearer {key}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 1234),
        "server": ("127.0.0.1", 80),
    }  # fmt: skip

    async def call() -> None:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app({**scope, "state": {}}, receive, send)
        if sent[0]["status"] != 200:
            raise SystemExit(f"{method} {path}: {sent[0]['status']} {sent[1:]}")

    return call


async def timed(call: Callable[[], Awaitable[None]], calls: int) -> dict[str, float]:
    for _ in range(300):
        await call()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        await call()
    return {
        "wall_ms": round((time.perf_counter() - wall) * 1000 / calls, 3),
        "cpu_ms": round((time.process_time() - cpu) * 1000 / calls, 3),
    }


def direct(app: Any, kb: str, calls: int) -> dict[str, float]:
    view = Scoped(app, Access.everything())
    where = view.collection_filter([kb])

    async def search() -> None:
        view.search(QUERY, where, None, 8)

    return asyncio.run(timed(search, calls))


async def routes(app: Any, key: str, kb: str, calls: int) -> dict[str, dict[str, float]]:
    query = json.dumps({"collection_names": [kb], "query": QUERY, "k": 8}).encode()
    out = {}
    async with app.router.lifespan_context(app):
        for name, method, path, body in (
            ("GET /healthz", "GET", "/healthz", b""),
            ("GET /v1/models", "GET", "/v1/models", b""),
            ("POST /api/v1/retrieval/query/collection", "POST",
             "/api/v1/retrieval/query/collection", query),
        ):  # fmt: skip
            out[name] = await timed(asgi_call(app, method, path, key, body), calls)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="an ingested SciFact dir")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    app, _, kb = open_scifact_index(args.data_dir)
    try:
        out: dict[str, Any] = {"search in process": direct(app, kb, args.calls)}
    finally:
        app.close()
    key = bench_key(args.data_dir, kb)
    settings = Settings.load(data_dir=args.data_dir, auth="required", serve_job_worker=False)
    out |= asyncio.run(routes(create_app(settings), key, kb, args.calls))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
