"""Writes into a big table whose copy the API processes search (memory/changes.py): how
soon an upload through one process is found through the others, and what searches cost
while the copy holds changes, against reading LanceDB (what every search did, before the
changes were kept, from each write until the copy was made again a minute or more later).

The data dir is ``shared_copy.py``'s (built there if missing: SciFact plus noisy copies,
``--rows``). A server with ``--workers`` is started and its copies awaited, then:
``--queries`` SciFact queries are searched one after another (hybrid, k=8, after 20
untimed; once untimed before, so every pass finds their embeddings cached) on the copy;
``--uploads`` files are uploaded (``wait=true``), each a text of ``--paragraphs``
paragraphs with a token of its own, and after each the token is searched on
new connections (any process) until every one of ``--workers`` answers in a row finds
it; the same queries are searched again (copy plus changes) and the copy's stats read.
The server is SIGKILLed and started again: the seconds until every process searches a copy
(the saved one and the changes since), and the last upload found. Then it is started
with ``table_copy_mb=0`` and the queries searched on LanceDB, side by side on the same
data.

    .venv/bin/python -m benchmarks.copy_writes --source /tmp/scifact --work /tmp/shared \
        --rows 1000000 --workers 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.shared_copy import KB, PORT, build, copies_ready, searching_everywhere
from citewell.testing.served import kill, start_server

BASE = f"http://127.0.0.1:{PORT}"


def search_times(client: httpx.Client, queries: list[str], count: int) -> dict[str, float]:
    spent = []
    for n, query in enumerate(queries[: count + 20]):
        body = {"collection_names": [KB], "query": query, "k": 8}
        start = time.perf_counter()
        client.post("/api/v1/retrieval/query/collection", json=body).raise_for_status()
        if n >= 20:
            spent.append((time.perf_counter() - start) * 1000)
    spent.sort()
    return {
        "p50_ms": round(statistics.median(spent), 1),
        "p95_ms": round(spent[int(0.95 * (len(spent) - 1))], 1),
    }


def document(n: int, paragraphs: int) -> bytes:
    token = f"zqupload{n:04d}"
    body = [
        f"Paragraph {p} of upload {n} ({token}): the cohort study measured blood pressure "
        f"in {p * 7 + n} adults over {p % 9 + 1} years and found a modest effect of sodium."
        for p in range(paragraphs)
    ]
    return ("\n\n".join([f"# Upload {n}", *body]) + "\n").encode()


def found_everywhere(
    token: str, workers: int, limit: float = 30.0, base: str = BASE, kb: str = KB
) -> float:
    """Seconds until ``workers`` searches in a row, each on a new connection, find it."""
    began, streak = time.perf_counter(), 0
    body = {"collection_names": [kb], "query": token, "k": 8}
    while streak < workers:
        with httpx.Client(base_url=base, timeout=60) as client:
            hits = client.post("/api/v1/retrieval/query/collection", json=body).json()
        found = any(token in text for text in (hits.get("documents") or [[]])[0])
        streak = streak + 1 if found else 0
        if time.perf_counter() - began > limit:
            return float("inf")
    return time.perf_counter() - began


def fresh_tokens(count: int) -> range:
    """Upload numbers that no earlier run against the same data dir used."""
    first = int(time.time()) % 100_000 * 100
    return range(first, first + count)


def timed_uploads(
    client: httpx.Client, numbers: range, workers: int, paragraphs: int, kb: str = KB
) -> dict[str, Any]:
    """A file uploaded through the API for each of ``numbers`` (its text carries the token
    ``zqupload<n>``), each followed by searches on new connections until ``workers`` in a
    row find it: the seconds each upload took, and until every worker found it."""
    spent, visible, chunks = [], [], None
    base = str(client.base_url).rstrip("/")
    for n in numbers:
        files = {"file": (f"upload-{time.time_ns()}.md", document(n, paragraphs))}
        began = time.perf_counter()
        made = client.post(f"/api/v1/knowledge/{kb}/files", files=files)
        made.raise_for_status()
        spent.append(round(time.perf_counter() - began, 2))
        chunks = made.json().get("chunks_embedded")
        found = found_everywhere(f"zqupload{n:04d}", workers, base=base, kb=kb)
        visible.append(round(found, 2))
    median = round(statistics.median(spent), 2) if spent else None
    return {"chunks_an_upload": chunks, "upload_s": spent, "upload_s_median": median,
            "found_everywhere_s": visible}  # fmt: skip


def with_copy(args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    options = ("--workers", str(args.workers))
    server = start_server(args.work / "data", PORT, {}, options, args.work / "server.log")
    try:
        with httpx.Client(base_url=BASE, timeout=300) as client:
            with searching_everywhere(queries, args.workers, least=10.0):
                states = copies_ready(client, args.workers, args.wait)
            search_times(client, queries, args.queries)  # the query embeddings cached
            before = search_times(client, queries, args.queries)
            uploaded = timed_uploads(client, range(args.uploads), args.workers, args.paragraphs)
            after = search_times(client, queries, args.queries)
            copy = client.get("/api/v1/stats/store").json()["table_copy"]
    finally:
        kill(server)
    restart = restarted(args, queries)
    return {
        "copy_states_seen": states, "searches_on_copy": before,
        **uploaded,
        "searches_on_copy_with_changes": after,
        "copy_after": {k: copy[k] for k in ("current", "rows", "changed_rows", "state")},
        "after_sigkill": restart,
    }  # fmt: skip


def restarted(args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    """The server started again after a SIGKILL: seconds until every worker searches a
    copy (the saved one with the uploads' changes, or one made anew), and whether the
    last upload is found."""
    options = ("--workers", str(args.workers))
    began = time.monotonic()
    server = start_server(args.work / "data", PORT, {}, options, args.work / "server.log")
    try:
        with httpx.Client(base_url=BASE, timeout=300) as client:
            with searching_everywhere(queries, args.workers, least=0.0):
                states = copies_ready(client, args.workers, args.wait)
            ready = time.monotonic() - began
            found = found_everywhere(f"zqupload{args.uploads - 1:04d}", args.workers)
            copy = client.get("/api/v1/stats/store").json()["table_copy"]
    finally:
        kill(server)
    return {
        "copies_current_s": round(ready, 1), "copy_states_seen": states,
        "last_upload_found_s": round(found, 2), "changed_rows": copy["changed_rows"],
    }  # fmt: skip


def on_lancedb(args: argparse.Namespace, queries: list[str]) -> dict[str, float]:
    env = {"CITEWELL_TABLE_COPY_MB": "0"}
    options = ("--workers", str(args.workers))
    server = start_server(args.work / "data", PORT, env, options, args.work / "server.log")
    try:
        with httpx.Client(base_url=BASE, timeout=300) as client:
            return search_times(client, queries, args.queries)
    finally:
        kill(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path("/tmp/scifact"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/shared"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--uploads", type=int, default=5)
    parser.add_argument("--paragraphs", type=int, default=400, help="an upload's")
    parser.add_argument("--wait", type=float, default=900.0, help="seconds to wait for copies")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    queries = build(args)
    result = {"rows": args.rows, "workers": args.workers, **with_copy(args, queries)}
    result["searches_on_lancedb"] = on_lancedb(args, queries)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
