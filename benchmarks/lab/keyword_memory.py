"""Keyword search on a small embedded table: LanceDB's full-text index against the BM25
postings the in-memory snapshot holds (stores/bm25_memory.py), alternating per query.

Reports each side's p50 over the SciFact test queries, how much of LanceDB's top 50 the
snapshot returns, and the largest relative difference between the two scores of a chunk.

    python -m benchmarks.lab.keyword_memory --data-dir /tmp/scifact
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import open_scifact_index  # noqa: E402
from citewell.auth.access import Access  # noqa: E402
from citewell.engine.scoped import Scoped  # noqa: E402
from citewell.retrieval.tokenize import terms_string  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    app, data, kb = open_scifact_index(args.data_dir)
    where = Scoped(app, Access.everything()).collection_filter([kb])
    store = app.retriever.space.store
    snapshot = None
    while snapshot is None:  # built in the background after the store opens
        snapshot = store._current_snapshot()
        time.sleep(0.1)
    lance_ms, memory_ms, overlap, worst = [], [], [], 0.0
    for query in data.queries.values():
        terms = terms_string(query, app.settings.retrieval.bm25_stemmer)
        began = time.perf_counter()
        fts = store._table.search(terms, query_type="fts", fts_columns="terms")
        lance = store._run(fts, 50, where, "_score")
        lance_ms.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        memory = snapshot.keyword_search(terms.split(), 50, where)
        memory_ms.append((time.perf_counter() - began) * 1000)
        scores = {row["id"]: row["_score"] for row in lance}
        overlap.append(len(scores.keys() & {i for i, _ in memory}) / max(1, len(scores)))
        for chunk_id, score in memory:
            if chunk_id in scores:
                worst = max(worst, abs(scores[chunk_id] - score) / max(scores[chunk_id], 1e-9))
    print(
        json.dumps(
            {
                "chunks": len(snapshot.ids),
                "queries": len(lance_ms),
                "lancedb_p50_ms": round(statistics.median(lance_ms), 2),
                "in_memory_p50_ms": round(statistics.median(memory_ms), 2),
                "top50_overlap": round(statistics.mean(overlap), 4),
                "largest_relative_score_difference": worst,
            },
            indent=1,
        )
    )
    app.close()


if __name__ == "__main__":
    main()
