"""Sweep the hybrid-fusion settings on an existing SciFact index (no re-embedding).

    python -m benchmarks.lab.tune_fusion --data-dir /tmp/citewell-bench

Prints nDCG@10 and recall@100 for each (fusion, bm25 weight, rrf k, candidate k); the
defaults in config.py were chosen from this table (BENCHMARKS.md, "Choosing the defaults").
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from benchmarks.common import open_scifact_index  # noqa: E402
from citewell import SearchMode  # noqa: E402
from citewell.evaluation.beir import evaluate_mode  # noqa: E402

GRID = {
    "fusion": ["rrf", "weighted"],
    "bm25_weight": [0.3, 0.4, 0.5, 0.6],
    "rrf_k": [20, 60],
    "candidate_k": [30, 100],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    app, data, kb = open_scifact_index(args.data_dir)
    rows = []
    for fusion, weight, rrf_k, cand in itertools.product(*GRID.values()):
        if fusion == "weighted" and rrf_k != GRID["rrf_k"][0]:
            continue  # rrf_k plays no part in weighted fusion
        # In this process only: the index's data dir keeps its settings.
        app.live.update(
            {"fusion": fusion, "hybrid_bm25_weight": weight, "rrf_k": rrf_k, "candidate_k": cand},
            persist=False,
        )
        result = evaluate_mode(app, data, kb, SearchMode.HYBRID).public()
        rows.append(
            {
                "fusion": fusion,
                "bm25_weight": weight,
                "rrf_k": rrf_k,
                "candidate_k": cand,
                "ndcg@10": result["ndcg@10"],
                "recall@100": result["recall@100"],
            }
        )
        print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
