"""Hybrid search at the answering k on SciFact: the embedded store and PostgreSQL side by side.

Copies an ingested SciFact data dir (``citewell eval --beir …`` makes one), moves the copy
into a fresh database (``citewell migrate``, no re-embedding: the same chunks and vectors),
then searches the 300 test queries through ``HybridRetriever.search`` at k=8 in one process,
alternating per query between three apps: embedded (SQLite + LanceDB), PostgreSQL with the
in-memory copy of small tables (the default), and PostgreSQL with it off
(``vector_index_min_rows = 0``: every search in SQL). Query embedding included; each round
appends a different token to the queries so the embedding cache is never hit. The first 20
queries of the first round are warm-up.

    python -m benchmarks.postgres_latency --scifact /tmp/scifact --work /tmp/pglatency
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import SCIFACT, summary  # noqa: E402
from citewell import Citewell, SearchMode, Settings  # noqa: E402
from citewell.auth.access import Access  # noqa: E402
from citewell.engine.scoped import Scoped  # noqa: E402
from citewell.evaluation.beir import load_beir  # noqa: E402
from citewell.retrieval.retriever import RetrievalTrace  # noqa: E402
from citewell.testing.postgres import EmbeddedPostgres  # noqa: E402


def open_apps(scifact: Path, work: Path, url: str) -> dict[str, Citewell]:
    embedded, moved = work / "embedded", work / "postgres"
    for copy in (embedded, moved):
        if not copy.exists():
            shutil.copytree(scifact, copy)
    cli = [sys.executable, "-m", "citewell", "--data-dir", str(moved)]
    subprocess.run([*cli, "migrate", "--to", url], check=True, capture_output=True)
    return {
        "embedded": Citewell.from_settings(Settings.load(data_dir=embedded)),
        "postgresql": Citewell.from_settings(Settings.load(data_dir=moved, database_url=url)),
        "postgresql, all in SQL": Citewell.from_settings(
            Settings.load(data_dir=moved, database_url=url, vector_index_min_rows=0)
        ),
    }


def measure(apps: dict[str, Citewell], rounds: int) -> dict[str, dict[str, Any]]:
    queries = list(load_beir(SCIFACT, "test").queries.values())
    filters = {}
    for name, app in apps.items():
        kb = app.catalog.list_kbs()[0].name
        filters[name] = Scoped(app, Access.everything()).collection_filter([kb])
    time.sleep(5)  # the in-memory copy is read in the background on first use
    steps: dict[str, dict[str, list[float]]] = {name: {} for name in apps}
    for r in range(rounds):
        for n, query in enumerate(queries):
            for name, app in apps.items():
                trace, began = RetrievalTrace(), time.perf_counter()
                app.retriever.search(f"{query} r{r}", filters[name], 8, SearchMode.HYBRID, trace)
                if r == 0 and n < 20:
                    continue
                steps[name].setdefault("search", []).append((time.perf_counter() - began) * 1e3)
                for step, ms in trace.timings.items():
                    steps[name].setdefault(step, []).append(ms)
    return {name: {s: summary(v) for s, v in by.items()} for name, by in steps.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, required=True, help="an ingested data dir")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    server = EmbeddedPostgres(args.work / "pg")
    server.start()
    try:
        apps = open_apps(args.scifact, args.work, server.create_database())
        result = measure(apps, args.rounds)
    finally:
        server.stop()
    base = result["embedded"]["search"]["p50"]
    for name, steps in result.items():
        ratio = steps["search"]["p50"] / base
        parts = ", ".join(f"{s} {v['p50']}" for s, v in steps.items() if s != "search")
        print(f"{name}: p50 {steps['search']['p50']} ms ({ratio:.2f}x), "
              f"p95 {steps['search']['p95']} ms; steps p50: {parts}")  # fmt: skip
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
