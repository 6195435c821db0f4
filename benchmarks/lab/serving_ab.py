"""One change's effect on serving: two servers, one per source tree, on one SciFact data dir.

A machine shared with others drifts by 10-30 % over minutes, so two revisions measured one
after the other say little. Here both servers run at once (``citewell serve`` from
``--baseline-src`` and from ``--src``, default this checkout) and:

1. one client sends each query to both, in alternating order, and takes each server's
   latency and the CPU time it spent (its processes' /proc times) per request;
2. each server is saturated by ``--clients`` clients for ``--seconds``, in the order
   baseline, new, new, baseline, so drift over the run falls on both sides alike.

Every query is new to both servers' query-embedding caches (a counter word is added).
Rate limits are off on both servers. Make a baseline tree with ``git worktree add``:

    git worktree add /tmp/before <commit>
    .venv/bin/python -m benchmarks.lab.serving_ab --data-dir /tmp/scifact \\
        --baseline-src /tmp/before/src --endpoint chat
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import open_scifact_index
from benchmarks.serving import (
    bench_key,
    cpu_seconds,
    free_port,
    load,
    measured,
    request,
    start_server,
)

SIDES = ("baseline", "new")


def start(data_dir: Path, src: Path | None) -> tuple[subprocess.Popen, str]:
    env = {"CITEWELL_RATE_LIMIT_PER_MINUTE": "0"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    port = free_port()
    return start_server(data_dir, port, [], env), f"http://127.0.0.1:{port}"


def alternating(
    servers: dict[str, tuple[subprocess.Popen, str]], key: str, kb: str, queries: list[str],
    endpoint: str, warmup: int,
) -> dict[str, Any]:  # fmt: skip
    """Each query to both servers in turn (which goes first alternates)."""
    latency: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu = dict.fromkeys(SIDES, 0.0)
    headers = {"Authorization": f"Bearer {key}"}
    clients = {
        side: httpx.Client(base_url=base, headers=headers, timeout=60)
        for side, (_, base) in servers.items()
    }
    for n, query in enumerate(queries):
        for side in SIDES if n % 2 else reversed(SIDES):
            path, body = request(endpoint, kb, f"{query} a{n}")
            pid = servers[side][0].pid
            cpu_before, began = cpu_seconds(pid), time.perf_counter()
            clients[side].post(path, json=body).raise_for_status()
            if n >= warmup:
                latency[side].append((time.perf_counter() - began) * 1000)
                cpu[side] += cpu_seconds(pid) - cpu_before
    for client in clients.values():
        client.close()
    return {
        side: {
            "p50_ms": round(statistics.median(latency[side]), 2),
            "p90_ms": round(sorted(latency[side])[int(0.9 * len(latency[side]))], 2),
            "server_cpu_ms_per_request": round(cpu[side] * 1000 / len(latency[side]), 2),
        }
        for side in SIDES
    } | {"queries": len(queries) - warmup}


def saturate(
    base: str, key: str, kb: str, queries: list[str], args: argparse.Namespace, tag: str
) -> Any:
    """A phase of back-to-back clients against one server, for ``measured``."""
    return lambda: asyncio.run(
        load(base, key, kb, queries, args.clients, args.seconds, None, False, args.endpoint, tag)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--baseline-src", type=Path, required=True)
    parser.add_argument("--src", type=Path, help="the new side's src (default: this checkout)")
    parser.add_argument("--endpoint", choices=("retrieval", "chat"), default="chat")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    _, data, kb = open_scifact_index(args.data_dir)
    queries = list(data.queries.values())
    key = bench_key(args.data_dir, kb)
    servers = {
        "baseline": start(args.data_dir, args.baseline_src),
        "new": start(args.data_dir, args.src),
    }
    try:
        out: dict[str, Any] = {"endpoint": args.endpoint}
        out["one_client"] = alternating(
            servers, key, kb, queries[: args.queries + 20], args.endpoint, warmup=20
        )
        out["saturation"] = []
        for n, side in enumerate(("baseline", "new", "new", "baseline")):
            server, base = servers[side]
            phase = saturate(base, key, kb, queries, args, f"s{n}")
            out["saturation"].append({"side": side, **measured(phase, server.pid)})
        print(json.dumps(out, indent=2))
    finally:
        for server, _ in servers.values():
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
