"""BM25's k1 and b on SciFact, tuned on train, reported on test: BM25 alone and hybrid.

The stores fix k1 1.2 and b 0.75 (LanceDB's full-text index cannot change them). The
in-memory postings (stores/memory/bm25.py) can, so this measures what other values would
give before anything is changed. Each setting ranks every chunk of the SciFact KB; hybrid
fuses the top 50 with the vector search's top 50 as the retriever does (weighted min-max,
BM25 weight 0.5); chunks collapse to documents (their best chunk) for nDCG@10.

    python -m benchmarks.tune_bm25 --data-dir /tmp/strategies/character
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.common import SCIFACT


def ndcg(
    ranked: list[tuple[str, float]],
    docs_of_file: dict[str, list[str]],
    file_of: dict[str, str],
    relevant: dict[str, int],
) -> float:
    """nDCG@10 of chunks ranked, each counted as its file's documents (best chunk first)."""
    from citewell.evaluation.metrics import ndcg_at_k

    docs = [d for chunk, _ in ranked for d in docs_of_file.get(file_of[chunk], [])]
    return ndcg_at_k(list(dict.fromkeys(docs)), relevant, 10)


def main() -> None:
    from citewell import Citewell, Settings
    from citewell.evaluation.beir import index_fingerprint, load_beir
    from citewell.retrieval import terms_string
    from citewell.retrieval.fusion import top, weighted_score_fusion
    from citewell.stores.base import scanning
    from citewell.stores.memory.bm25 import KeywordPostings
    from citewell.types import ChunkFilter

    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    app = Citewell.from_settings(Settings.load(data_dir=args.data_dir))
    everything = scanning(app.store).scan(ChunkFilter())
    ids = [c.id for c in everything]
    file_of = {c.id: c.file_id for c in everything}
    terms = pa.array([c.terms for c in everything])
    embedder = app.retriever.space.embedder
    grid = [(k1, b) for k1 in (0.9, 1.2, 1.5, 2.0) for b in (0.5, 0.75, 0.9)]
    postings = {setting: KeywordPostings.build(terms, *setting) for setting in grid}
    for split in ("train", "test"):
        data = load_beir(SCIFACT, split)
        kb = app.kb_id(f"beir-{data.name}-{index_fingerprint(app, data)}")
        docs_of_file: dict[str, list[str]] = {}
        for path, record in app.catalog.files_in_kb(kb).items():
            docs_of_file.setdefault(record.id, []).append(path)

        prepared = []
        for query_id, query in data.queries.items():
            vector = embedder.embed([query], "query")[0].tolist()
            hits = app.store.vector_search(vector, 50, ChunkFilter(kb_ids=(kb,)))
            words = terms_string(query, app.settings.retrieval.bm25_stemmer).split()
            prepared.append((query_id, words, [(h.chunk_id, h.score) for h in hits]))
        for (k1, b), index in postings.items():
            alone = hybrid = 0.0
            for query_id, words, vector_hits in prepared:
                scores = index.scores(words)
                best = np.argsort(-scores, kind="stable")[:50]
                keyword = [(ids[i], float(scores[i])) for i in best if scores[i] > 0]
                relevant, fused = (
                    data.qrels[query_id],
                    weighted_score_fusion([vector_hits, keyword], [0.5, 0.5]),
                )
                alone += ndcg(keyword, docs_of_file, file_of, relevant)
                hybrid += ndcg(top(fused, 50), docs_of_file, file_of, relevant)
            n = len(prepared)
            row = {"split": split, "k1": k1, "b": b}
            print(json.dumps({**row, "bm25": round(alone / n, 4), "hybrid": round(hybrid / n, 4)}))
    app.close()


if __name__ == "__main__":
    main()
