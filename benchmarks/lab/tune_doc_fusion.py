"""Document-level fusion on SciFact, tuned on the train split, reported on test.

Chunk-level hybrid fuses each chunk's vector and BM25 scores: a document whose best vector
chunk and best BM25 chunk differ gets neither bonus in full. Here both lists are first
collapsed to documents (each file's best chunk score per retriever), then fused with the
same weighted min-max fusion. Runs on an index made by `citewell eval` or
benchmarks/lab/chunking_strategies.py (--data-dir), no re-ingestion.

    python -m benchmarks.lab.tune_doc_fusion --data-dir /tmp/strategies/character
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common import SCIFACT


def by_doc(results, docs_of_file) -> dict[str, float]:  # noqa: ANN001
    best: dict[str, float] = {}
    for r in results:
        score = r.vector_score if r.vector_score is not None else r.bm25_score
        for doc in docs_of_file.get(r.chunk.file_id, []):
            best[doc] = max(best.get(doc, float("-inf")), score or 0.0)
    return best


def normalised(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = (high - low) or 1.0
    return {d: (s - low) / span for d, s in scores.items()}


def main() -> None:
    from citewell import Citewell, Settings
    from citewell.evaluation.beir import index_fingerprint, load_beir
    from citewell.evaluation.metrics import ndcg_at_k
    from citewell.types import SearchMode

    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    app = Citewell.from_settings(Settings.load(data_dir=args.data_dir))
    for split in ("train", "test"):
        data = load_beir(SCIFACT, split)
        kb = f"beir-{data.name}-{index_fingerprint(app, data)}"
        docs_of_file: dict[str, list[str]] = {}
        for path, record in app.catalog.files_in_kb(app.kb_id(kb)).items():
            docs_of_file.setdefault(record.id, []).append(path)
        lists = []
        for query_id, query in data.queries.items():
            vector = by_doc(app.search(query, [kb], SearchMode.VECTOR, k=100), docs_of_file)
            bm25 = by_doc(app.search(query, [kb], SearchMode.BM25, k=100), docs_of_file)
            hybrid = app.search(query, [kb], SearchMode.HYBRID, k=100)
            chunk_level = list(
                dict.fromkeys(d for r in hybrid for d in docs_of_file.get(r.chunk.file_id, []))
            )
            lists.append((query_id, normalised(vector), normalised(bm25), chunk_level))
        for weight in (0.3, 0.4, 0.5, 0.6):
            total = chunk_total = 0.0
            for query_id, vector, bm25, chunk_level in lists:
                fused = {
                    d: (1 - weight) * vector.get(d, 0.0) + weight * bm25.get(d, 0.0)
                    for d in {*vector, *bm25}
                }
                ranked = sorted(fused, key=lambda d: -fused[d])
                total += ndcg_at_k(ranked, data.qrels[query_id], 10)
                chunk_total += ndcg_at_k(chunk_level, data.qrels[query_id], 10)
            n = len(lists)
            print(
                json.dumps(
                    {
                        "split": split,
                        "bm25_weight": weight,
                        "doc_fusion_ndcg@10": round(total / n, 4),
                        "chunk_fusion_ndcg@10": round(chunk_total / n, 4),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
