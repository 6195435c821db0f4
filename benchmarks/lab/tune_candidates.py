"""nDCG@10 of hybrid search at the answering depth (k=10) for several candidate_k values.

    python -m benchmarks.lab.tune_candidates --data-dir /tmp/citewell-bench

At k=10 the candidate pool of each retriever is candidate_k (the eval's k=100 hides it).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from benchmarks.common import open_scifact_index  # noqa: E402
from citewell import SearchMode  # noqa: E402
from citewell.evaluation.metrics import ndcg_at_k, recall_at_k  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    app, data, kb = open_scifact_index(args.data_dir)
    docs: dict[str, list[str]] = {}
    for path, record in app.catalog.files_in_kb(app.kb_id(kb)).items():
        docs.setdefault(record.id, []).append(path)
    for candidates in (20, 30, 50, 100):
        app.live.update({"candidate_k": candidates}, persist=False)
        ndcg = recall = 0.0
        for query_id, query in data.queries.items():
            results = app.search(query, [kb], SearchMode.HYBRID, k=10)
            ranked = list(dict.fromkeys(d for r in results for d in docs.get(r.chunk.file_id, [])))
            ndcg += ndcg_at_k(ranked, data.qrels[query_id], 10)
            recall += recall_at_k(ranked, data.qrels[query_id], 10)
        n = len(data.queries)
        print(
            json.dumps(
                {
                    "candidate_k": candidates,
                    "ndcg@10": round(ndcg / n, 4),
                    "recall@10": round(recall / n, 4),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
