"""MCP search against the same search over the HTTP API, side by side in one run, and many
MCP sessions at once.

Needs a SciFact data dir (``--data-dir``; ingested on first use). Starts `citewell serve`
(auth required, a non-admin key with read access to the SciFact KB, no rate limit) and:

1. round trip: one MCP session with the official SDK over Streamable HTTP ("mcp"), the same
   JSON-RPC ``tools/call`` posted by httpx in a session of its own ("wire": what the
   server adds, without the SDK client's own work), and httpx posting
   ``POST /api/v1/retrieval/query/collection`` ("http"); each SciFact test query (made
   unique with a counter, so no query-embedding cache hit) goes to all three, in a random
   order per query, k=8; medians and their ratios to "http";
2. sessions: ``--sessions`` MCP sessions (each its own client and connection) searching
   back to back for ``--seconds``; calls, errors, p50/p95.

    python -m benchmarks.mcp_search --data-dir /tmp/scifact --queries 200 \
        --sessions 50 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

import httpx  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from benchmarks.common import open_scifact_index  # noqa: E402
from benchmarks.serving import bench_key, free_port, start_server  # noqa: E402

SEARCH_PATH = "/api/v1/retrieval/query/collection"


def mcp_client(base: str, key: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
    return Client(streamable_http_client(f"{base}/mcp", http_client=http))


async def mcp_search(client: Client, kb: str, query: str) -> None:
    result = await client.call_tool("search", {"query": query, "knowledge_bases": [kb], "k": 8})
    if result.is_error or len(result.structured_content["passages"]) != 8:
        raise RuntimeError(f"MCP search failed: {result.content}")


async def wire_session(http: httpx.AsyncClient) -> dict[str, str]:
    """An MCP session opened by hand: initialize, then initialized."""
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "wire", "version": "1"},
    }
    answer = await http.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
    )
    answer.raise_for_status()
    headers = {"mcp-protocol-version": "2025-06-18"}
    if "mcp-session-id" in answer.headers:
        headers["mcp-session-id"] = answer.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post("/mcp", json=done, headers=headers)
    return headers


async def round_trips(base: str, key: str, kb: str, queries: list[str]) -> dict[str, Any]:
    times: dict[str, list[float]] = {"mcp": [], "wire": [], "http": []}
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
    }
    async with (
        mcp_client(base, key) as client,
        httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as http,
    ):
        session = await wire_session(http)
        await mcp_search(client, kb, "warm up")
        (await http.post(SEARCH_PATH, json={"collection_names": [kb], "query": "warm", "k": 8}))
        for n, query in enumerate(queries):
            order = list(times)
            random.shuffle(order)
            for side in order:
                unique = f"{query} {side}{n}"
                began = time.perf_counter()
                if side == "mcp":
                    await mcp_search(client, kb, unique)
                elif side == "wire":
                    arguments = {"query": unique, "knowledge_bases": [kb], "k": 8}
                    call = {"name": "search", "arguments": arguments}
                    body = {"jsonrpc": "2.0", "id": n + 1, "method": "tools/call", "params": call}
                    (await http.post("/mcp", json=body, headers=session)).raise_for_status()
                else:
                    body = {"collection_names": [kb], "query": unique, "k": 8}
                    (await http.post(SEARCH_PATH, json=body)).raise_for_status()
                times[side].append((time.perf_counter() - began) * 1000)
    medians = {side: statistics.median(values) for side, values in times.items()}
    return {
        "queries": len(queries),
        **{f"{side}_p50_ms": round(value, 2) for side, value in medians.items()},
        "mcp_ratio": round(medians["mcp"] / medians["http"], 3),
        "wire_ratio": round(medians["wire"] / medians["http"], 3),
    }


async def one_session(
    base: str, key: str, kb: str, queries: list[str], tag: int, until: float, seen: dict
) -> None:
    try:
        async with mcp_client(base, key) as client:
            n = 0
            while time.monotonic() < until:
                began = time.perf_counter()
                try:
                    await mcp_search(client, kb, f"{queries[n % len(queries)]} s{tag}n{n}")
                    seen["latency"].append((time.perf_counter() - began) * 1000)
                except Exception as exc:  # counted: the acceptance is zero
                    seen["errors"].append(repr(exc)[:200])
                n += 1
    except Exception as exc:
        seen["errors"].append(f"session {tag}: {exc!r}"[:200])


async def sessions(base: str, key: str, kb: str, queries: list[str], count: int, seconds: float):
    seen: dict[str, list] = {"latency": [], "errors": []}
    until = time.monotonic() + seconds
    began = time.monotonic()
    await asyncio.gather(
        *(one_session(base, key, kb, queries, tag, until, seen) for tag in range(count))
    )
    elapsed = time.monotonic() - began
    latency = sorted(seen["latency"])
    return {
        "sessions": count,
        "seconds": round(elapsed, 1),
        "calls": len(latency),
        "calls_per_s": round(len(latency) / elapsed, 1),
        "errors": len(seen["errors"]),
        "first_errors": seen["errors"][:3],
        "p50_ms": round(latency[len(latency) // 2], 1) if latency else None,
        "p95_ms": round(latency[int(len(latency) * 0.95)], 1) if latency else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    app, data, kb = open_scifact_index(args.data_dir)
    app.close()
    queries = [q for _, q in sorted(data.queries.items())]
    key = bench_key(args.data_dir, kb)
    port = free_port()
    server = start_server(args.data_dir, port, [], {"CITEWELL_RATE_LIMIT_PER_MINUTE": "0"})
    base = f"http://127.0.0.1:{port}"
    try:
        report = {
            "round_trip": asyncio.run(round_trips(base, key, kb, queries[: args.queries])),
            "sessions": asyncio.run(sessions(base, key, kb, queries, args.sessions, args.seconds)),
        }
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
