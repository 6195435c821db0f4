"""What metrics and tracing cost: the same SciFact search against two `citewell serve`
processes side by side, one with /metrics and OpenTelemetry tracing on (spans exported
over OTLP/HTTP to a receiver in a process of its own that reads and drops them), one with
both off. ``--sample 0.1`` keeps one trace in ten (OTEL_TRACES_SAMPLER), as busy servers do.

1. latency: one client, each SciFact test query (made unique with a counter) to both
   servers in a random order per query; medians and their ratio;
2. saturation: ``--clients`` clients back to back for ``--seconds`` against each server,
   ``--rounds`` pairs of runs (both sides in a random order); requests/s and the server's
   CPU time per request (from /proc: all its threads, ONNX's included), as the median of
   the pairs' on/off ratios, since the machine's own drift over a run is larger than
   what is measured. Each round's queries carry a tag of their own, so none is answered
   from the query-embedding cache (``--cached`` sends the same queries every round: what
   a search costs beyond its embedding, where the overhead's share is largest). The
   server's time in the kernel is reported apart.

On this shared 2-core machine a pair's ratio wanders by ±15 %; many short rounds
(``--seconds 3 --rounds 30``) give a steadier median, ``--on none`` (both sides off) shows
what the noise alone gives, and ``--pin`` puts the servers on one CPU and the load
generator on the other, so they do not take time from each other.

    .venv/bin/python -m benchmarks.observability_overhead --data-dir /tmp/scifact \
        --work /tmp/overhead --queries 300 --clients 8 --seconds 10 --rounds 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import shutil
import statistics
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import open_scifact_index
from benchmarks.serving import bench_key, cpu_seconds, free_port, load, start_server

SEARCH_PATH = "/api/v1/retrieval/query/collection"


class Sink(BaseHTTPRequestHandler):
    """The OTLP receiver: reads what arrives and drops it, counting the bytes."""

    received: Any = None  # a multiprocessing.Value

    def do_POST(self) -> None:  # noqa: N802
        size = int(self.headers.get("Content-Length", 0))
        self.rfile.read(size)
        with Sink.received.get_lock():
            Sink.received.value += size
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def run_sink(port: int, received: Any) -> None:
    """In a process of its own, so it does not slow this load generator only while the
    traced side runs."""
    Sink.received = received
    ThreadingHTTPServer(("127.0.0.1", port), Sink).serve_forever()


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


def saturation(
    bases: dict[str, str], servers: dict[str, Any], key: str, kb: str, queries: list[str], args
) -> dict[str, Any]:
    """``--rounds`` pairs, each both sides back to back in a random order; the ratio of each
    pair, so the machine's drift (large on a shared machine) falls on both sides alike."""
    for base in bases.values():  # warm both (caches, allocator, threads) before counting
        warm = "c" if args.cached else "w"
        asyncio.run(load(base, key, kb, queries, args.clients, 10, None, False, tag=warm))
    rates: dict[str, list[float]] = {"off": [], "on": []}
    cpu: dict[str, list[float]] = {"off": [], "on": []}
    system: dict[str, list[float]] = {"off": [], "on": []}
    for round_ in range(args.rounds):
        for side in random.sample(["off", "on"], 2):
            before, kernel = cpu_seconds(servers[side].pid), system_seconds(servers[side].pid)
            # every query new to the server's embedding cache, unless --cached
            tag = "c" if args.cached else f"{side}{round_}x"
            done = asyncio.run(
                load(
                    bases[side], key, kb, queries, args.clients, args.seconds, None, False, tag=tag
                )
            )
            rates[side].append(done["done_per_s"])
            cpu[side].append((cpu_seconds(servers[side].pid) - before) * 1000 / done["requests"])
            kernel = system_seconds(servers[side].pid) - kernel
            system[side].append(kernel * 1000 / done["requests"])
    return {
        "saturation_per_s": _paired(rates),
        "server_cpu_ms_per_request": _paired(cpu),
        "of_which_kernel_ms_per_request": _paired(system),
        "rounds": {"per_s": rates, "cpu_ms": {k: [round(x, 2) for x in v] for k, v in cpu.items()}},
    }


def system_seconds(pid: int) -> float:
    """The server's CPU time in the kernel (sockets, threads waking), all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[12]) / os.sysconf("SC_CLK_TCK")


def _paired(values: dict[str, list[float]]) -> dict[str, Any]:
    pairs = zip(values["on"], values["off"], strict=True)
    ratios = [on / off for on, off in pairs if off] or [float("nan")]
    return {
        "off_median": round(statistics.median(values["off"]), 2),
        "on_median": round(statistics.median(values["on"]), 2),
        "ratio_on_off_median_of_pairs": round(statistics.median(ratios), 3),
        "ratio_on_off_of_means": round(
            statistics.fmean(values["on"]) / statistics.fmean(values["off"]), 3
        ),
        "ratios": [round(r, 3) for r in ratios],
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cached", action="store_true", help="Repeat queries across rounds.")
    parser.add_argument(
        "--on",
        choices=["both", "metrics", "tracing", "none"],
        default="both",
        help="What the measured side turns on (the other side has both off); none: both "
        "sides alike, to see what the machine's noise alone gives.",
    )
    parser.add_argument(
        "--sample", type=float, default=1.0, help="Share of traces kept (OTEL_TRACES_SAMPLER)."
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="Servers on CPU 0, this load generator and the receiver on CPU 1: no "
        "contention between them (Linux).",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.pin:
        os.sched_setaffinity(0, {1})  # the receiver, spawned next, inherits it
    app, data, kb = open_scifact_index(args.data_dir)
    app.close()
    queries = [q for _, q in sorted(data.queries.items())]
    received = multiprocessing.get_context("spawn").Value("q", 0)
    sink_port = free_port()
    spawn = multiprocessing.get_context("spawn")  # not a fork of this process and its LanceDB
    sink = spawn.Process(target=run_sink, args=(sink_port, received), daemon=True)
    sink.start()
    sampler = {}
    if args.sample < 1:
        sampler = {
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": str(args.sample),
        }
    tracing = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink_port}", **sampler}
    metrics_off = {"CITEWELL_METRICS": "false"}
    on = {
        "both": tracing,
        "metrics": {},
        "tracing": {**tracing, **metrics_off},
        "none": metrics_off,
    }[args.on]
    envs = {"off": metrics_off, "on": on}
    key = bench_key(args.data_dir, kb)  # before the copies, so both know it
    servers, bases = {}, {}
    try:
        if args.pin:
            os.sched_setaffinity(0, {0})  # the servers, started next, inherit it
        for side, extra in envs.items():
            data_dir = args.work / side
            shutil.rmtree(data_dir, ignore_errors=True)
            shutil.copytree(args.data_dir, data_dir)
            port = free_port()
            env = {**extra, "CITEWELL_RATE_LIMIT_PER_MINUTE": "0"}
            servers[side] = start_server(data_dir, port, [], env)
            bases[side] = f"http://127.0.0.1:{port}"
        if args.pin:
            os.sched_setaffinity(0, {1})
        report: dict[str, Any] = {"latency": latency(bases, key, kb, queries[: args.queries])}
        report.update(saturation(bases, servers, key, kb, queries, args))
        report["span_bytes_exported"] = received.value
    finally:
        for server in servers.values():
            server.terminate()
            server.wait(timeout=60)
        sink.terminate()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
