"""How much an operator's ``citewell import`` slows another tenant's searches on one box.

A user (``bench``, read access to ``alice-docs`` alone) searches a served KB back to back,
first with nothing else running ("alone", once the server has been idle for 2 s), then
while ``citewell import`` loads ``--chunks`` chunks with their vectors into another KB of
the same data dir ("during"), as a separate process beside ``citewell serve``, as an
operator would run it. With ``--priorities low,normal`` rounds take turns running the
import at each CPU priority. Each round imports new texts into a new KB, so the table
grows by ``--chunks`` a round. The figures that matter are the during/alone ratios of the
search latency's median and p95, beside the import's own speed; the server's and the
import's CPU seconds are given too (on 2 cores they compete).

The KBs' chunks are SciFact sentences with random unit vectors (``import_chunks.rows``):
a search costs the same whatever the vectors mean. Queries are SciFact sentences, each made
new with a counter word so none hits the query-embedding cache.

    python -m benchmarks.import_fairness --chunks 200000 --rounds 2 --priorities low,normal
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import scifact_docs, summary  # noqa: E402
from benchmarks.import_chunks import write_files  # noqa: E402
from benchmarks.serving import (  # noqa: E402
    CLI,
    PlainClient,
    bench_key,
    cpu_seconds,
    free_port,
    start_server,
)

ALICE_CHUNKS = 20_000  # fewer than vector_index_min_rows: a KB with a copy of its own
SEARCH = "/api/v1/retrieval/query/collection"


def with_own_texts(chunks: Path, tag: str) -> Path:
    """``chunks`` with texts of their own, each prefixed with ``tag`` (an import of texts
    the tenant holds already would link them into the new KB, not store them)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = chunks.with_name(f"{chunks.stem}-{tag}.parquet")
    if not path.exists():
        table = pq.read_table(chunks)
        texts = [f"{tag}: {t}" for t in table.column("text").to_pylist()]
        pq.write_table(table.set_column(1, "text", pa.array(texts)), path)
    return path


def cli(data_dir: Path, *args: str) -> subprocess.Popen:
    command = [*CLI, "--data-dir", str(data_dir), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def imported(process: subprocess.Popen) -> dict[str, Any]:
    """The import's --json report, once it has ended."""
    out, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"citewell import failed ({process.returncode}): {out[-500:]}")
    return dict(json.loads(out.strip().splitlines()[-1]))


class Searcher:
    """The other tenant: one keep-alive connection, a new query each time."""

    def __init__(self, base: str, key: str) -> None:
        self.client = PlainClient(base, key)
        sentences = [t.split(". ")[0] for _, t in scifact_docs(400)]
        self.queries = [s[:200] for s in sentences if len(s) > 30]
        self.sent = 0

    def once(self) -> float:
        query = f"{self.queries[self.sent % len(self.queries)]} q{self.sent}"
        self.sent += 1
        began = time.perf_counter()
        self.client.post(SEARCH, {"collection_names": ["alice-docs"], "query": query, "k": 8})
        return time.perf_counter() - began

    def alone(self, samples: int) -> list[float]:
        return [self.once() for _ in range(samples)]

    def during(self, process: subprocess.Popen) -> list[float]:
        times = []
        while process.poll() is None:
            times.append(self.once())
        return times


def children_cpu() -> float:
    """CPU seconds of the child processes that ended and were waited for (the imports)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def settle(pid: int, most: float = 300.0) -> float:
    """Until the server is idle (under 0.1 s of CPU in 2 s: its copies made after the last
    import), so that "alone" is alone; how long that took."""
    began = time.monotonic()
    while time.monotonic() - began < most:
        used = cpu_seconds(pid)
        time.sleep(2)
        if cpu_seconds(pid) - used < 0.1:
            break
    return time.monotonic() - began


def ratios(alone: list[float], during: list[float]) -> dict[str, Any]:
    quiet, busy = summary([t * 1000 for t in alone]), summary([t * 1000 for t in during])
    return {
        "alone_ms": quiet,
        "during_ms": busy,
        "p50_ratio": round(statistics.median(during) / statistics.median(alone), 2),
        "p95_ratio": round(busy["p95"] / max(quiet["p95"], 1e-9), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=200_000, help="Chunks an import loads.")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--samples", type=int, default=200, help="Searches alone, a round.")
    parser.add_argument("--work", type=Path, default=Path("/tmp/import-fairness"))
    parser.add_argument(
        "--priorities", default="low", help='The import\'s --priority: "low", "normal" or both'
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    data_dir = args.work / f"data-{os.getpid()}"
    bulk = write_files(args.work, args.chunks, 384, ["parquet"])["parquet"]
    alice = with_own_texts(
        write_files(args.work, ALICE_CHUNKS, 384, ["parquet"])["parquet"], "alice"
    )
    imported(cli(data_dir, "import", str(alice), "--kb", "alice-docs", "--json"))
    key = bench_key(data_dir, "alice-docs")
    port = free_port()
    server = start_server(data_dir, port, [], {})
    rounds = []
    try:
        searcher = Searcher(f"http://127.0.0.1:{port}", key)
        searcher.alone(20)  # warm
        priorities = [p for _ in range(args.rounds) for p in args.priorities.split(",")]
        for round_no, priority in enumerate(priorities):
            chunks = with_own_texts(bulk, f"round{round_no}")
            settled = settle(server.pid)
            alone = searcher.alone(args.samples)
            served_cpu, import_cpu = cpu_seconds(server.pid), children_cpu()
            process = cli(data_dir, "import", str(chunks), "--kb",
                          f"bulk-{round_no}", "--json", "--priority", priority)  # fmt: skip
            during = searcher.during(process)
            report = imported(process)
            rounds.append({
                "priority": priority,
                "server_settled_seconds": round(settled, 1),
                **ratios(alone, during),
                "import_seconds": round(report["seconds"], 1),
                "import_chunks_per_second": round(report["chunks_per_second"]),
                "server_cpu_seconds_during": round(cpu_seconds(server.pid) - served_cpu, 1),
                "import_cpu_seconds": round(children_cpu() - import_cpu, 1),
            })  # fmt: skip
        searcher.client.close()
    finally:
        server.terminate()
        server.wait(30)
    print(json.dumps({"chunks_per_import": args.chunks, "rounds": rounds}, indent=2))
    shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
