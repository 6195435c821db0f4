"""Query latency on the SciFact index: hybrid (and each mode) at the default k, with the query
embedding and without it (vectors computed beforehand), measured alternately per query.

    python -m benchmarks.query_latency --data-dir /tmp/citewell-bench
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from benchmarks.common import open_scifact_index, summary  # noqa: E402
from citewell import SearchMode  # noqa: E402
from citewell.retrieval.retriever import HybridRetriever  # noqa: E402


class PrecomputedQueries:
    """Stands in for the embedder at query time: returns vectors computed beforehand."""

    def __init__(self, inner, queries):
        self.inner, self.model_id = inner, inner.model_id
        self.vectors = dict(zip(queries, inner.embed(queries, "query"), strict=False))

    @property
    def dimension(self):
        return self.inner.dimension

    def embed(self, texts, kind="document"):  # noqa: ARG002 (the Embedder signature)
        import numpy as np

        return np.stack([self.vectors[t] for t in texts])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    app, data, kb = open_scifact_index(args.data_dir)
    queries = list(data.queries.values())
    with_embed = {m: [] for m in SearchMode}
    without = []
    real = app.retriever
    fake = HybridRetriever(
        app.store, PrecomputedQueries(real.space.embedder, queries), real.settings, real.reranker
    )
    for _ in range(args.rounds):
        for query in queries:
            for mode in SearchMode:
                began = time.perf_counter()
                app.search(query, [kb], mode)
                with_embed[mode].append((time.perf_counter() - began) * 1000)
            app.retriever = fake
            began = time.perf_counter()
            app.search(query, [kb], SearchMode.HYBRID)
            without.append((time.perf_counter() - began) * 1000)
            app.retriever = real
    print(
        json.dumps(
            {
                "chunks": app.store.count(app_filter(app, kb)),
                "queries": len(queries),
                "k": app.settings.retrieval.top_k,
                "candidate_k": app.settings.retrieval.candidate_k,
                "ms": {
                    **{f"{m.value}": summary(v) for m, v in with_embed.items()},
                    "hybrid_without_query_embedding": summary(without),
                },
            },
            indent=2,
        )
    )


def app_filter(app, kb):
    from citewell.types import ChunkFilter

    return ChunkFilter(kb_ids=(app.catalog.get_kb(kb).id,))


if __name__ == "__main__":
    main()
