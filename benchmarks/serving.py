"""Retrieval over HTTP: per-request overhead against the same search in process, and load.

Needs a SciFact data dir (``--data-dir``; ingested by ``citewell eval`` or
benchmarks/query_latency.py first). It adds a user ``bench`` with read access to the SciFact
KB and a key for it, then starts ``citewell serve`` on 127.0.0.1 as a separate process (so the
load generator does not share its interpreter) and:

1. overhead: one client, queries alternating between POST /api/v1/retrieval/query/collection
   and the same search in this process (``Scoped.search`` as the route calls it), each query
   new to both sides' query-embedding caches, in a random order per query (whichever side
   comes right after another pays to wake its threads); overhead = median HTTP - median in
   process, once with httpx and once with the standard library's http.client (leaner);
2. saturation: ``--clients`` clients sending back to back for ``--seconds``;
3. offered load: ``--clients`` clients together offering ``--rate`` requests/s (each client
   on its own schedule; latency counted from the scheduled send time, so queueing shows).

Load queries are the 300 SciFact test queries, each made unique with a counter word so no
request hits the query-embedding cache (``--repeat`` sends them as they are instead). The
CPU time of the server (all its processes) and of this load generator are both reported: on
2 cores they compete.

``--endpoint chat`` sends the load to ``POST /v1/chat/completions`` instead (the question
with ``knowledge_collections``; no LLM configured, so answers are extractive). ``--workers``
runs that many API processes; ``--database-url`` serves the data from PostgreSQL (moved there
first with ``citewell migrate``; the data dir keeps the stored files). ``--skip-overhead``
leaves out step 1.

    python -m benchmarks.serving --data-dir /tmp/scifact --clients 50 --seconds 60 --rate 40
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

import httpx  # noqa: E402

from benchmarks.common import SCIFACT, open_scifact_index  # noqa: E402

CLI = [sys.executable, "-m", "citewell"]
EXTRACTIVE = "citewell-extractive"  # the model served when no LLM is configured


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PlainClient:
    """One keep-alive connection through the standard library's ``http.client``: a lean
    client, so what a request costs the server is not hidden by what it costs the client
    (httpx spends 0.5-1 ms of its own per request here)."""

    def __init__(self, base: str, key: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self._connection = http.client.HTTPConnection(host, int(port))
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def post(self, path: str, body: dict[str, Any]) -> bytes:
        self._connection.request("POST", path, body=json.dumps(body), headers=self._headers)
        response = self._connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}: {data[:200]!r}")
        return data

    def close(self) -> None:
        self._connection.close()


def bench_key(data_dir: Path, kb: str) -> str:
    def run(*args: str) -> str:
        cmd = [*CLI, "--data-dir", str(data_dir), *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()

    run("user", "create", "bench", "--no-password")
    run("share", kb, "user:bench")
    return run("key", "create", "--user", "bench", "--name", "serving-benchmark")


def start_server(
    data_dir: Path, port: int, extra: list[str], env: dict[str, str], log: Path | None = None
) -> subprocess.Popen:
    cmd = [*CLI, "--data-dir", str(data_dir), "serve", "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(
        [*cmd, *extra],
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab") if log else subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the server did not start")


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and its descendants still running (a server's API processes)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = children.read_text().split() if children.exists() else []
    return own + sum(cpu_seconds(int(kid)) for kid in kids)


SEARCH_PATH = "/api/v1/retrieval/query/collection"


def overhead(base: str, key: str, app: Any, kb: str, queries: list[str]) -> dict[str, Any]:
    """One client: each query over HTTP by httpx, over HTTP by http.client and in process."""
    from citewell.auth.access import Access
    from citewell.engine.scoped import Scoped

    lean = PlainClient(base, key)
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client:
        steps = {
            "http": by_httpx(client, kb),
            "plain": by_plain(lean, kb),
            "local": in_process(Scoped(app, Access.everything()), kb),
        }
        times = {
            name: statistics.median(spent) for name, spent in timed_steps(steps, queries).items()
        }
    lean.close()
    return {
        "http_p50_ms": round(times["http"], 2),
        "http_client_p50_ms": round(times["plain"], 2),
        "in_process_p50_ms": round(times["local"], 2),
        "overhead_ms": round(times["http"] - times["local"], 2),
        "overhead_http_client_ms": round(times["plain"] - times["local"], 2),
        "queries": len(queries),
    }


def timed_steps(steps: dict[str, Callable[[str], object]], queries: list[str]) -> dict:
    """Milliseconds each step took for each query, each time as a new query (so no side
    finds it in its query-embedding cache), in a new random order each time: a side asked
    right after itself finds its threads awake, one asked after another pays to wake them."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    shuffled = random.Random(1)
    for n, query in enumerate(queries):
        order = list(steps.items())
        shuffled.shuffle(order)
        for step, (name, send) in enumerate(order):
            began = time.perf_counter()
            send(f"{query} q{n}s{step}")
            times[name].append((time.perf_counter() - began) * 1000)
    return times


def in_process(view: Any, kb: str) -> Callable[[str], object]:
    """The search as the retrieval route runs it, in this process."""
    from citewell.types import SearchMode

    where = view.collection_filter([kb])
    return lambda query: view.search(query, where, SearchMode.HYBRID, 8)


def by_httpx(client: httpx.Client, kb: str) -> Callable[[str], object]:
    def send(query: str) -> object:
        body = {"collection_names": [kb], "query": query, "k": 8}
        return client.post(SEARCH_PATH, json=body).raise_for_status()

    return send


def by_plain(client: PlainClient, kb: str) -> Callable[[str], object]:
    return lambda query: client.post(
        SEARCH_PATH, {"collection_names": [kb], "query": query, "k": 8}
    )


def request(endpoint: str, kb: str, query: str) -> tuple[str, dict[str, Any]]:
    if endpoint == "chat":
        messages = [{"role": "user", "content": query}]
        body = {"model": EXTRACTIVE, "messages": messages, "knowledge_collections": [kb]}
        return "/v1/chat/completions", body
    return "/api/v1/retrieval/query/collection", {"collection_names": [kb], "query": query, "k": 8}


async def load(
    base: str, key: str, kb: str, queries: list[str], clients: int, seconds: float,
    rate: float | None, repeat: bool, endpoint: str = "retrieval", tag: str = "u",
) -> dict[str, Any]:  # fmt: skip
    latencies: list[float] = []
    errors: dict[str, int] = {}
    counter = iter(range(10**9))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as c:
        began = time.perf_counter()
        end = began + seconds

        async def one(due: float) -> None:
            n = next(counter)
            query = queries[n % len(queries)] + ("" if repeat else f" {tag}{n}")
            path, body = request(endpoint, kb, query)
            try:
                response = await c.post(path, json=body)
                if response.status_code != 200:
                    errors[str(response.status_code)] = errors.get(str(response.status_code), 0) + 1
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
            latencies.append((time.perf_counter() - due) * 1000)

        async def client(i: int) -> None:
            if rate is None:  # back to back
                while time.perf_counter() < end:
                    await one(time.perf_counter())
                return
            interval = clients / rate
            due = began + interval * i / clients
            while due < end:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                await one(due)
                due += interval

        await asyncio.gather(*(client(i) for i in range(clients)))
        elapsed = time.perf_counter() - began
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(len(ordered) * p))], 1)

    return {
        "clients": clients,
        "offered_per_s": rate,
        "requests": len(ordered),
        "done_per_s": round(len(ordered) / elapsed, 1),
        "p50_ms": pct(0.5),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
        "errors": errors,
    }


def busy_seconds() -> float:
    """CPU seconds the whole machine spent busy so far (/proc/stat: all but idle and iowait),
    so a database server's own processes count too."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def measured(fn, server_pid: int) -> dict[str, Any]:
    """``fn()``'s result with the CPU seconds the server, this process and the whole machine
    spent meanwhile."""
    server_before, own_before = cpu_seconds(server_pid), resource.getrusage(resource.RUSAGE_SELF)
    busy_before = busy_seconds()
    began = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - began
    result["machine_cores"] = round((busy_seconds() - busy_before) / wall, 2)
    own = resource.getrusage(resource.RUSAGE_SELF)
    own_cpu = own.ru_utime + own.ru_stime - own_before.ru_utime - own_before.ru_stime
    result["server_cores"] = round((cpu_seconds(server_pid) - server_before) / wall, 2)
    result["load_generator_cores"] = round(own_cpu / wall, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rate", type=float, default=40)
    parser.add_argument("--overhead-queries", type=int, default=200)
    parser.add_argument("--repeat", action="store_true", help="send queries unchanged")
    parser.add_argument("--server-args", default="", help="more `citewell serve` options")
    parser.add_argument("--endpoint", choices=("retrieval", "chat"), default="retrieval")
    parser.add_argument("--workers", type=int, default=1, help="API processes")
    parser.add_argument("--database-url", default="", help="serve from PostgreSQL")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--server-log", type=Path, help="append the server's stderr here")
    args = parser.parse_args()
    env = {"CITEWELL_WORKERS": str(args.workers)}
    if args.database_url:  # every process of this benchmark, this one's bench_key too
        os.environ["CITEWELL_DATABASE_URL"] = env["CITEWELL_DATABASE_URL"] = args.database_url
    app, data, kb = open_scifact_index(args.data_dir)
    queries = list(data.queries.values())
    key = bench_key(args.data_dir, kb)
    port = free_port()
    server = start_server(args.data_dir, port, args.server_args.split(), env, args.server_log)
    base = f"http://127.0.0.1:{port}"
    try:
        out: dict[str, Any] = {"data": str(SCIFACT.name), "kb": kb, "endpoint": args.endpoint}
        out["workers"], out["database"] = args.workers, "postgresql" if args.database_url else ""
        if not args.skip_overhead:
            out["overhead"] = overhead(base, key, app, kb, queries[: args.overhead_queries])
        run = lambda rate, tag: asyncio.run(  # noqa: E731
            load(
                base,
                key,
                kb,
                queries,
                args.clients,
                args.seconds,
                rate,
                args.repeat,
                args.endpoint,
                tag,
            )  # fmt: skip
        )
        out["saturation"] = measured(lambda: run(None, "u"), server.pid)
        # Words of their own: the saturation phase's queries are still in the server's
        # query-embedding cache (4,096 of them), so reusing them would measure cache hits.
        out["offered"] = measured(lambda: run(args.rate, "r"), server.pid)
        print(json.dumps(out, indent=1))
    finally:
        server.terminate()
        server.wait(timeout=60)
        app.close()


if __name__ == "__main__":
    main()
