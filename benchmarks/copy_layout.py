"""A big table's copy, this tree against another (``--other``, a checkout of an earlier
commit put first on ``PYTHONPATH``), side by side on one data dir: `citewell serve` with one
worker, in turns, ``--rounds`` times each.

Each turn starts the server, searches until its copy is current, runs ``--queries`` SciFact
queries once untimed (their embeddings cached, the copy's pages read) and once timed
(hybrid, k=8, one connection), then reads the process's memory from ``smaps_rollup``:
anonymous (its own, not given back under pressure) and file-backed (the copy's mapped
pages: the page cache's, reclaimable). Then, in this process, the quality of the copy as
this tree maps it: recall@50 of its vector search against an exact one (the vectors of
evenly spread rows as queries) and the agreement of its BM25 top 10 (float16 impacts)
with scores recomputed from each posting's tf (float32).

    .venv/bin/python -m benchmarks.copy_layout --data /tmp/shared/data --other /tmp/old/src

With ``--build``, each tree instead makes the table's copy from the store, in a process of
its own, into a scratch directory: seconds and the process's peak RSS.

The data dir is one with a big table (``benchmarks.shared_copy`` builds a million chunks).
Layouts that older trees cannot read are made again by them. ``--other-data`` gives the
other tree a data dir of its own, so each searches the copy its own code made: a copy of
``--data`` made with hard links (``cp -al`` of ``lancedb``, ``files`` and
``table_copies``; the SQLite files copied).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.common import SCIFACT

PORT = 8741
KB = "all"


def memory_mb(pid: int) -> dict[str, int]:
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[key] = int(value.split()[0]) >> 10
    return {"rss_mb": fields["Rss"], "anonymous_mb": fields["Anonymous"],
            "file_backed_mb": fields["Rss"] - fields["Anonymous"]}  # fmt: skip


def search(client: httpx.Client, query: str) -> float:
    body = {"collection_names": [KB], "query": query, "k": 8}
    began = time.perf_counter()
    client.post("/api/v1/retrieval/query/collection", json=body).raise_for_status()
    return (time.perf_counter() - began) * 1000


def turn(data: Path, queries: list[str], python_path: str | None, log: Path) -> dict[str, Any]:
    env = {**os.environ, "CITEWELL_AUTH": "none"}
    if python_path:
        env["PYTHONPATH"] = python_path
    command = [sys.executable, "-m", "citewell", "--data-dir", str(data), "serve"]
    with log.open("w") as out:
        server = subprocess.Popen([*command, "--port", str(PORT)], env=env, stdout=out, stderr=out)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{PORT}", timeout=300) as client:
            for n in range(1200):
                try:
                    search(client, queries[n % len(queries)])
                    if client.get("/api/v1/stats/store").json()["table_copy"]["current"]:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.5)
            for query in queries:
                search(client, query)
            spent = sorted(search(client, query) for query in queries)
        return {"p50_ms": round(statistics.median(spent), 1),
                "p95_ms": round(spent[int(0.95 * (len(spent) - 1))], 1),
                **memory_mb(server.pid)}  # fmt: skip
    finally:
        server.kill()
        server.wait()


BUILD = """
import json, resource, sys, tempfile, threading, time
from pathlib import Path
from citewell import Citewell, Settings
from citewell.stores.memory.shared_copy import SharedCopies
app = Citewell.from_settings(Settings.load(data_dir=sys.argv[1]), switch_models=False)
store = app.store
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
most = {"anonymous": 0}
def anonymous():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("Anonymous:"):
            return int(line.split()[1]) >> 10
def watch():
    while True:
        most["anonymous"] = max(most["anonymous"], anonymous())
        time.sleep(0.2)
threading.Thread(target=watch, daemon=True).start()
with tempfile.TemporaryDirectory(dir=sys.argv[1]) as work:
    began = time.monotonic()
    copy = SharedCopies(store._shared.source, Path(work)).load(store.vector_index)
    spent = time.monotonic() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rows = copy.count if hasattr(copy, "count") else len(copy.ids)
    print(json.dumps({"rows": rows, "build_s": round(spent, 1), "peak_rss_mb": peak >> 10,
                      "before_mb": before >> 10, "peak_anonymous_mb": most["anonymous"]}))
"""


def build(data: Path, python_path: str | None) -> dict[str, Any]:
    """Make the table's copy from the store in a process of its own (into a scratch
    directory): seconds, the process's peak RSS (with the files it maps) and its peak
    anonymous memory (its own, sampled every 0.2 s)."""
    env = {**os.environ, **({"PYTHONPATH": python_path} if python_path else {})}
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(data)], env=env, capture_output=True, check=True
    )
    return dict(json.loads(done.stdout.decode().strip().splitlines()[-1]))


def quality(data: Path, queries: list[str]) -> dict[str, float]:
    from citewell.retrieval.tokenize import tokenize
    from citewell.stores.index_policy import VectorIndexPolicy
    from citewell.stores.memory.shared_copy import read_copy

    (path,) = sorted(data.glob("table_copies/*/v*"))[-1:]
    copy = read_copy(path, VectorIndexPolicy())
    nearly_all = np.ones(copy.count, dtype=bool)
    nearly_all[0] = False  # a scope short of the table: impacts recomputed from tf
    agreed = []
    for query in queries:
        words = tokenize(query)
        stored, exact = copy.postings.scores(words), copy.postings.scores(words, nearly_all)
        top = [set(np.argsort(-s, kind="stable")[:10].tolist()) for s in (stored, exact)]
        agreed.append(len(top[0] & top[1]) / 10)
    assert copy.ann is not None
    return {"bm25_top10_agreement": round(float(np.mean(agreed)), 4),
            "recall_at_50": copy.ann.recall(50)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/shared/data"))
    parser.add_argument("--other", help="PYTHONPATH of the tree to compare with")
    parser.add_argument(
        "--other-data", type=Path, help="its own data dir (a copy of --data: cp -al)"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--build", action="store_true", help="time making the copy instead")
    args = parser.parse_args()
    if args.build:
        for round_ in range(args.rounds):
            for label, path in (("other", args.other), ("this", None)):
                if label != "other" or path:
                    print(json.dumps({"tree": label, "round": round_, **build(args.data, path)}))
        return
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()
    queries = [json.loads(line)["text"] for line in lines][: args.queries]
    results: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        for label, path in (("other", args.other), ("this", None)):
            if label == "other" and not path:
                continue
            data = args.other_data if label == "other" and args.other_data else args.data
            found = turn(data, queries, path, args.data.parent / f"layout-{label}.log")
            results.append({"tree": label, "round": round_, **found})
            print(json.dumps(results[-1]), flush=True)
    print(json.dumps({"quality": quality(args.data, queries)}))


if __name__ == "__main__":
    main()
