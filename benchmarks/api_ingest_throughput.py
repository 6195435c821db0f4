"""Throughput of ingestion through the HTTP API (batch upload, the job queue, its worker) next
to the raw encoder on the same texts.

A real server (uvicorn on 127.0.0.1, in this process so it shares the encoder) gets the
first N SciFact documents as N small Markdown files in batch uploads; the clock runs from
the first upload to the last job indexed. Rounds alternate encoder and API on a fresh data
dir (empty embedding cache). The figure that matters is the ratio API/encoder.

    python -m benchmarks.api_ingest_throughput --docs 1000 --rounds 2

``--instant-embedder`` puts a stub in the encoder's place that answers at once (unit vectors
from a fixed pool, as a remote embedding service with spare capacity would return them), so
the figure is the pipeline's own ceiling: upload, queue, parse, split, write.
``--embed-latency 0.2`` makes the stub wait that long per call, as a remote service's round
trip would (its waits overlap the pipeline's other work, or add to it). ``--worker-alone``
uploads everything first with the job worker off, then times the worker alone: the queue's
rate where the API runs in another process (``serve_job_worker = false`` and ``citewell
worker``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import httpx  # noqa: E402

from benchmarks.common import encoder_and_texts, scifact_docs, timed  # noqa: E402
from citewell import Citewell, Settings  # noqa: E402
from citewell.api.app import create_app  # noqa: E402
from citewell.embedders import OnnxEmbedder  # noqa: E402
from citewell.testing.asgi import served  # noqa: E402

UPLOAD_BATCH = 250
WARM_UP = [("warm-up-1", "Two small files first."), ("warm-up-2", "Before the clock starts.")]


class InstantEmbedder:
    """A stub embedding model that answers at once, or after ``latency`` seconds a call (a
    remote service's round trip): 384-dimensional unit vectors drawn from a fixed pool
    (their meaning is not what this benchmark measures)."""

    model_id = "instant-stub:384"
    dimension = 384

    def __init__(self, latency: float = 0.0) -> None:
        import numpy as np

        self.latency = latency
        pool = np.random.default_rng(1).standard_normal((4096, self.dimension))
        self.pool = (pool / np.linalg.norm(pool, axis=1, keepdims=True)).astype(np.float32)

    def embed(self, texts, kind="document"):  # noqa: ANN001, ANN201 - the Embedder protocol
        del kind  # documents and queries alike
        if self.latency:
            time.sleep(self.latency)
        rows = [hash(text) % len(self.pool) for text in texts]
        return self.pool[rows]


@contextmanager
def server(
    embedder: OnnxEmbedder | InstantEmbedder, variant: str
) -> Iterator[tuple[str, Citewell]]:
    """A server with the default settings, changed by ``variant`` ("name=value,...")."""
    changes = dict(pair.split("=", 1) for pair in variant.split(",") if pair)
    # Removed after the server stops (its lifespan closes the app): 80 MB a run were left.
    with tempfile.TemporaryDirectory(prefix="citewell-bench-", ignore_cleanup_errors=True) as where:
        settings = Settings.load(data_dir=Path(where), auth="none", **changes)
        citewell = Citewell.from_settings(settings, embedder=embedder)
        with served(create_app(settings, citewell)) as base:
            yield base, citewell


def upload(base: str, docs: list[tuple[str, str]]) -> list[str]:
    """The documents as Markdown files in batch uploads; the batches' ids."""
    with httpx.Client(base_url=base, timeout=600) as client:
        batches = []
        for start in range(0, len(docs), UPLOAD_BATCH):
            files = [
                ("files", (f"{n}.md", t.encode())) for n, t in docs[start : start + UPLOAD_BATCH]
            ]
            response = client.post("/api/v1/knowledge/bench/batch", files=files)
            response.raise_for_status()
            batches.append(response.json()["batch_id"])
    return batches


def indexed(base: str, batches: list[str]) -> None:
    """Wait until every batch is done, all its files indexed."""
    with httpx.Client(base_url=base, timeout=600) as client:
        for batch in batches:
            while True:
                body = client.get(f"/api/v1/jobs/batches/{batch}").json()
                if body["done"]:
                    assert body["counts"] == {"indexed": body["total"]}, body["counts"]
                    break
                time.sleep(0.2)


def through_api(
    embedder: OnnxEmbedder | InstantEmbedder,
    variant: str,
    docs: list[tuple[str, str]],
    worker_alone: bool,
) -> tuple[float, float]:
    """Seconds from the first upload (or, ``worker_alone``, from the worker's start) to the
    last file indexed, and this process's CPU seconds meanwhile."""
    if worker_alone:
        variant = ",".join(p for p in [variant, "serve_job_worker=false"] if p)
    with server(embedder, variant) as (base, citewell):
        httpx.post(f"{base}/api/v1/knowledge", json={"name": "bench"}).raise_for_status()
        if worker_alone:
            citewell.start_workers()
        indexed(base, upload(base, WARM_UP))  # the reader processes start, as in a server
        if worker_alone and citewell.runner is not None:  # the uploads below wait for it
            citewell.runner.stop()
            citewell.runner = None
        batches = upload(base, docs) if worker_alone else []
        began, cpu = time.perf_counter(), time.process_time()
        if worker_alone:
            citewell.start_workers()
            indexed(base, batches)
        else:
            indexed(base, upload(base, docs))
        return time.perf_counter() - began, time.process_time() - cpu


def joined(docs: list[tuple[str, str]], per_file: int) -> list[tuple[str, str]]:
    """``per_file`` documents a file, one after the other, named after the first."""
    if per_file == 1:
        return docs
    parts = [docs[i : i + per_file] for i in range(0, len(docs), per_file)]
    return [(part[0][0], "\n\n".join(text for _, text in part)) for part in parts]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--variants",
        nargs="+",
        default=[""],
        help='settings to compare side by side, e.g. "job_batch_files=256,extract_workers=1"',
    )
    parser.add_argument(
        "--instant-embedder", action="store_true", help="a stub that answers at once"
    )
    parser.add_argument(
        "--embed-latency", type=float, default=0.0, help="the stub's wait per call, seconds"
    )
    parser.add_argument(
        "--worker-alone", action="store_true", help="upload first, then time the worker alone"
    )
    parser.add_argument(
        "--abstracts-per-file",
        type=int,
        default=1,
        help="files of this many SciFact abstracts each (at one a file, per-file costs weigh most)",
    )
    args = parser.parse_args()
    docs = joined(scifact_docs(args.docs * args.abstracts_per_file), args.abstracts_per_file)
    embedder, texts = encoder_and_texts(docs)
    served_by = InstantEmbedder(args.embed_latency) if args.instant_embedder else embedder
    encoder: list[float] = []
    api: dict[str, list[float]] = {v: [] for v in args.variants}
    cpu: dict[str, list[float]] = {v: [] for v in args.variants}
    for _ in range(args.rounds):
        encoder.append(len(texts) / timed(lambda: served_by.embed(texts)))
        for variant in args.variants:
            rate, seconds = through_api(served_by, variant, docs, args.worker_alone)
            api[variant].append(len(texts) / rate)
            cpu[variant].append(seconds)
    result: dict[str, object] = {
        "docs": len(docs),
        "abstracts_per_file": args.abstracts_per_file,
        "chunks": len(texts),
        "rounds": args.rounds,
        "encoder_chunks_per_s": round(statistics.median(encoder), 2),
    }
    for variant, rates in api.items():
        ratios = [a / e for a, e in zip(rates, encoder, strict=True)]
        result[variant or "defaults"] = {
            "api_chunks_per_s": round(statistics.median(rates), 2),
            "api_docs_per_s": round(statistics.median(rates) * len(docs) / len(texts), 2),
            "ratio_median": round(statistics.median(ratios), 3),
            # this process's CPU (server, worker and client; not the reader processes)
            "cpu_s": round(statistics.median(cpu[variant]), 2),
            "ratios": [round(r, 3) for r in ratios],
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
