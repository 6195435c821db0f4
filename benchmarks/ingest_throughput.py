"""Ingestion throughput of the whole pipeline next to the raw encoder on the same texts.

Both run in this one process, alternating, on a fresh data dir each round (so the embedding
cache starts empty). The figure that matters is the ratio pipeline/encoder.

    python -m benchmarks.ingest_throughput --docs 1000 --rounds 3
    python -m benchmarks.ingest_throughput --docs 300 --rounds 2 --sentence-vectors

``--sentence-vectors`` also ingests each round with ``sentence_vectors`` on (each chunk's
sentence pairs embedded too), into another fresh data dir, and reports its docs/s beside.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from benchmarks.common import encoder_and_texts, scifact_docs, timed  # noqa: E402
from citewell import Citewell, Settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentence-vectors", action="store_true")
    args = parser.parse_args()
    docs = scifact_docs(args.docs)
    embedder, texts = encoder_and_texts(docs)
    encoder, pipeline, pairs = [], [], []
    for _ in range(args.rounds):
        encoder.append(len(texts) / timed(lambda: embedder.embed(texts)))
        fresh = Citewell.from_settings(
            Settings.load(data_dir=Path(tempfile.mkdtemp())), embedder=embedder
        )
        pipeline.append(
            len(texts)
            / timed(lambda app=fresh: app.ingest_texts(docs, "bench", mime_type="text/markdown"))
        )
        if args.sentence_vectors:
            settings = Settings.load(data_dir=Path(tempfile.mkdtemp()), sentence_vectors=True)
            with_pairs = Citewell.from_settings(settings, embedder=embedder)
            pairs.append(
                len(texts)
                / timed(
                    lambda app=with_pairs: app.ingest_texts(docs, "b", mime_type="text/markdown")
                )
            )
    ratios = [p / e for p, e in zip(pipeline, encoder, strict=False)]
    extra = {}
    if pairs:
        extra = {
            "sentence_vectors_docs_per_s": round(
                statistics.median(pairs) * len(docs) / len(texts), 2
            ),
            "sentence_vectors_vs_pipeline": round(
                statistics.median(pairs) / statistics.median(pipeline), 3
            ),
        }
    print(
        json.dumps(
            {
                "docs": len(docs),
                "chunks": len(texts),
                "rounds": args.rounds,
                "encoder_chunks_per_s": round(statistics.median(encoder), 2),
                "pipeline_chunks_per_s": round(statistics.median(pipeline), 2),
                "pipeline_docs_per_s": round(
                    statistics.median(pipeline) * len(docs) / len(texts), 2
                ),
                "ratio_median": round(statistics.median(ratios), 3),
                "ratios": [round(r, 3) for r in ratios],
                **extra,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
