"""How the onnx embedder spreads its work over the cores, side by side.

Before: one onnxruntime session with an intra-op thread per core, token-sorted batches of 32
run one after another. Now: the same batches cut to a few texts, each run single-threaded,
one per core at once (``OnnxEmbedder.embed``). Both embed exactly the texts the pipeline
embeds for the first DOCS SciFact documents, alternating, ROUNDS times each; the figure is the
ratio of medians. A sweep of the batch size for the new way follows, and the largest
difference between the two ways' vectors.

With ``--query-latency`` it measures instead what ingestion does to searches: single query
embeddings timed idle, then while another thread embeds documents without a pause. Only the
public ``embed`` is used, so another revision can be measured through
``PYTHONPATH=<its src>``.

    python -m benchmarks.lab.embed_threads --docs 300 --rounds 3
    python -m benchmarks.lab.embed_threads --docs 100 --query-latency 300
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections.abc import Callable

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.common import encoder_and_texts, scifact_docs, timed  # noqa: E402
from benchmarks.lab.embed_batching import by_tokens  # noqa: E402
from citewell.embedders import OnnxEmbedder  # noqa: E402


def rate(texts: list[str], run: Callable[[], object]) -> float:
    return len(texts) / timed(run)


def query_times(embedder: OnnxEmbedder, count: int) -> list[float]:
    times = []
    for n in range(count):
        began = time.perf_counter()
        embedder.embed([f"which proteins does tumour {n} express"], "query")
        times.append((time.perf_counter() - began) * 1000)
    return times


def query_latency(embedder: OnnxEmbedder, texts: list[str], count: int) -> dict[str, float]:
    idle = query_times(embedder, count)
    stop = threading.Event()

    def ingest() -> None:
        while not stop.is_set():
            embedder.embed(texts)

    worker = threading.Thread(target=ingest)
    worker.start()
    time.sleep(1.0)  # the ingestion is well under way
    busy = query_times(embedder, count)
    stop.set()
    worker.join()
    ranked = sorted(busy)
    return {
        "idle_p50_ms": round(statistics.median(idle), 2),
        "ingesting_p50_ms": round(statistics.median(busy), 2),
        "ingesting_p95_ms": round(ranked[int(0.95 * (len(ranked) - 1))], 2),
        "ingesting_max_ms": round(ranked[-1], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="2,4,8,16,32", help="batch sizes for the sweep")
    parser.add_argument("--query-latency", type=int, default=0, metavar="QUERIES")
    args = parser.parse_args()
    docs = scifact_docs(args.docs)
    embedder, texts = encoder_and_texts(docs)
    if args.query_latency:
        print(json.dumps(query_latency(embedder, texts, args.query_latency), indent=2))
        return
    before, now = [], []
    for _ in range(args.rounds):
        before.append(rate(texts, lambda: by_tokens(embedder, texts)))
        now.append(rate(texts, lambda: embedder.embed(texts)))
    sweep = {}
    for size in (int(s) for s in args.sizes.split(",")):
        sized = OnnxEmbedder(batch_size=size)
        sweep[size] = statistics.median(
            rate(texts, lambda e=sized: e.embed(texts)) for _ in range(args.rounds)
        )
    difference = np.abs(by_tokens(embedder, texts) - embedder.embed(texts)).max()
    report = {
        "docs": len(docs),
        "chunks": len(texts),
        "threads": embedder.threads,
        "batch_size": embedder.batch_size,
        "before_chunks_per_s": round(statistics.median(before), 2),
        "now_chunks_per_s": round(statistics.median(now), 2),
        "speedup": round(statistics.median(now) / statistics.median(before), 3),
        "rounds_before": [round(r, 2) for r in before],
        "rounds_now": [round(r, 2) for r in now],
        "sweep_chunks_per_s": {k: round(v, 2) for k, v in sweep.items()},
        "largest_vector_difference": float(difference),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
