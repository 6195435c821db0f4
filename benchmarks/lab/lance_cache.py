"""What LanceDB's cache size (the ``lance_cache_mb`` setting) costs and buys on a big table.

Each cache size runs in a fresh process (so memory is that size's alone): it opens the
chunk table of ``million.py`` with ``LanceChunkStore(..., cache_mb=N)``, lets the indexes
prewarm, then runs store-level hybrid searches (vector + keyword, no query embedding: the
query vectors are SciFact's test queries, embedded once up front) in ``kb-all`` and in one
of 100 KBs, alternating. It reports search p50/p95, what LanceDB says its caches hold and
the process's PSS.

    python -m benchmarks.lab.lance_cache --source <SciFact data dir> \
        --lance /tmp/million/lancedb --sizes 256 1024 6144
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("RUST_LOG", "error")

import numpy as np  # noqa: E402

KBS = 100


def pss_mb() -> float:
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def queries(source: Path, out: Path) -> None:
    """The test queries and their vectors, embedded once by the SciFact data dir's model."""
    from common import open_scifact_index

    app, data, _kb = open_scifact_index(source)
    texts = list(data.queries.values())
    vectors = app.retriever.space.embedder.inner.embed(texts, "query")
    np.save(out / "vectors.npy", np.asarray(vectors, dtype=np.float32))
    (out / "queries.json").write_text(json.dumps(texts))


def child(lance: Path, work: Path, cache_mb: int, table: str, seconds_to_warm: float) -> dict:
    from citewell.stores.lance.store import LanceChunkStore
    from citewell.types import ChunkFilter

    vectors = np.load(work / "vectors.npy")
    texts = json.loads((work / "queries.json").read_text())
    began = time.perf_counter()
    store = LanceChunkStore(lance, table, vectors.shape[1], cache_mb=cache_mb)
    store.warm_searches()  # as a server does at start
    time.sleep(seconds_to_warm)  # the prewarm thread loads the indexes meanwhile
    warm = {"open_s": round(time.perf_counter() - began, 1), "pss_mb": pss_mb()}
    warm["cache_mb"] = round(store.cached_bytes / 2**20, 1)
    rng = random.Random(7)
    times: dict[str, list[float]] = {"kb_all": [], "one_of_100": []}
    for rounds in range(2):  # the first round is not timed: it fills the caches
        for vector, text in zip(vectors, texts, strict=True):
            for layout, spent in times.items():
                kb = "kb-all" if layout == "kb_all" else f"kb-{rng.randrange(KBS):02d}"
                where = ChunkFilter(kb_ids=(kb,))
                start = time.perf_counter()
                store.vector_search(vector.tolist(), 50, where)
                store.keyword_search(text, 50, where)
                if rounds:
                    spent.append((time.perf_counter() - start) * 1000)
    result = {"cache_setting_mb": cache_mb, "after_prewarm": warm}
    for layout, values in times.items():
        ordered = sorted(values)
        result[layout] = {
            "p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[int(len(ordered) * 0.95)], 1),
        }
    result["after_searches"] = {
        "pss_mb": pss_mb(),
        "cache_mb": round(store.cached_bytes / 2**20, 1),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", type=Path, required=True, help="SciFact data dir")
    parser.add_argument("--lance", type=Path, required=True, help="million.py's lancedb dir")
    parser.add_argument("--table", default="chunks")
    parser.add_argument("--work", type=Path, default=Path("lance_cache_work"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 6144])
    parser.add_argument("--warm-seconds", type=float, default=20.0)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.lance, args.work, args.child, args.table, args.warm_seconds)))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    if not (args.work / "vectors.npy").exists():
        queries(args.source, args.work)
    for size in args.sizes:
        command = [sys.executable, __file__, *sys.argv[1:], "--child", str(size)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        print(done.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
