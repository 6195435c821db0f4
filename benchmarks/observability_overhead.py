"""What metrics and tracing cost: the same SciFact search against two `citewell serve`
processes side by side, one with /metrics and OpenTelemetry tracing on (spans exported
over OTLP/HTTP to a receiver in this process that reads and drops them), one with both off.

1. latency: one client, each SciFact test query (made unique with a counter) to both
   servers in a random order per query; medians and their ratio;
2. saturation: ``--clients`` clients back to back for ``--seconds`` against each server in
   turn, in the order off, on, on, off (so drift falls on both); requests/s.

    cd benchmarks && ../.venv/bin/python observability_overhead.py --data-dir /tmp/scifact \
        --work /tmp/overhead --queries 300 --clients 8 --seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from common import open_scifact_index
from serving import bench_key, free_port, load, start_server

SEARCH_PATH = "/api/v1/retrieval/query/collection"


class Sink(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self) -> None:  # noqa: N802
        Sink.received += int(self.headers.get("Content-Length", 0))
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def latency(bases: dict[str, str], key: str, kb: str, queries: list[str]) -> dict[str, Any]:
    times: dict[str, list[float]] = {side: [] for side in bases}
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(headers=headers, timeout=60) as client:
        for n, query in enumerate(queries):
            for side in random.sample(list(bases), len(bases)):
                body = {"collection_names": [kb], "query": f"{query} {side}{n}", "k": 8}
                began = time.perf_counter()
                client.post(bases[side] + SEARCH_PATH, json=body).raise_for_status()
                times[side].append((time.perf_counter() - began) * 1000)
    medians = {side: round(statistics.median(v), 2) for side, v in times.items()}
    return {"p50_ms": medians, "ratio_on_off": round(medians["on"] / medians["off"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    app, data, kb = open_scifact_index(args.data_dir)
    app.close()
    queries = [q for _, q in sorted(data.queries.items())]
    sink = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    envs = {
        "off": {"CITEWELL_METRICS": "false"},
        "on": {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.server_address[1]}"},
    }
    key = bench_key(args.data_dir, kb)  # before the copies, so both know it
    servers, bases = {}, {}
    try:
        for side, extra in envs.items():
            data_dir = args.work / side
            shutil.rmtree(data_dir, ignore_errors=True)
            shutil.copytree(args.data_dir, data_dir)
            port = free_port()
            env = {**extra, "CITEWELL_RATE_LIMIT_PER_MINUTE": "0"}
            servers[side] = start_server(data_dir, port, [], env)
            bases[side] = f"http://127.0.0.1:{port}"
        report: dict[str, Any] = {"latency": latency(bases, key, kb, queries[: args.queries])}
        rates: dict[str, list[float]] = {"off": [], "on": []}
        for side in ("off", "on", "on", "off"):
            done = asyncio.run(
                load(bases[side], key, kb, queries, args.clients, args.seconds, None, False)
            )
            rates[side].append(done["done_per_s"])
        means = {side: round(statistics.fmean(v), 1) for side, v in rates.items()}
        report["saturation_per_s"] = {**means, "ratio_on_off": round(means["on"] / means["off"], 3)}
        report["span_bytes_exported"] = Sink.received
    finally:
        for server in servers.values():
            server.terminate()
            server.wait(timeout=60)
        sink.shutdown()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
