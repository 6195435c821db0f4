"""Pseudo-relevance feedback (RM3-style) for BM25 on SciFact, tuned on train, reported on test.

For each query: BM25's top ``fb`` chunks are the feedback set; each term of theirs is
weighted by its frequency in each chunk times the chunk's (max-normalised) BM25 score,
times its IDF over the KB (RM1 with an IDF, so the corpus's common words do not win); the
top ``terms`` terms make an expansion query. The store cannot weight query terms, so the
expanded ranking interpolates scores instead: (1 - w) × original + w × expansion, both
max-normalised, over the union of both top-100 lists. Chunks collapse to documents (their
best chunk) for nDCG@10. Hybrid fuses the result with the vector list the way the retriever
does not (min-max, BM25 weight 0.5), so only the BM25 columns compare cleanly with today's.

    python benchmarks/tune_rm3.py --data-dir /tmp/strategies/character
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path

from benchmarks.common import SCIFACT


def normalised(scores: dict[str, float]) -> dict[str, float]:
    top = max(scores.values(), default=0.0) or 1.0
    return {k: v / top for k, v in scores.items()}


def main() -> None:
    from citewell import Citewell, Settings
    from citewell.evaluation.beir import index_fingerprint, load_beir
    from citewell.evaluation.metrics import ndcg_at_k
    from citewell.retrieval import terms_string
    from citewell.stores.base import scanning
    from citewell.types import ChunkFilter

    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    app = Citewell.from_settings(Settings.load(data_dir=args.data_dir))
    store = app.store
    everything = scanning(store).scan(ChunkFilter())
    df = Counter(t for c in everything for t in set(c.terms.split()))
    n_chunks = len(everything)
    file_of = {c.id: c.file_id for c in everything}
    terms_of = {c.id: c.terms for c in everything}  # get() leaves terms out
    idf = {t: math.log(1 + (n_chunks - f + 0.5) / (f + 0.5)) for t, f in df.items()}
    for split in ("train", "test"):
        data = load_beir(SCIFACT, split)
        kb = f"beir-{data.name}-{index_fingerprint(app, data)}"
        where = ChunkFilter(kb_ids=(app.kb_id(kb),))
        docs_of_file: dict[str, list[str]] = {}
        for path, record in app.catalog.files_in_kb(app.kb_id(kb)).items():
            docs_of_file.setdefault(record.id, []).append(path)
        prepared = []
        for query_id, query in data.queries.items():
            terms = terms_string(query)
            hits = store.keyword_search(terms, 100, where)
            scores = normalised({h.chunk_id: h.score for h in hits})
            prepared.append((query_id, terms, hits, scores))
        for fb in (3, 10):
            for n_terms in (10, 20):
                expansions = []
                for _, terms, hits, scores in prepared:
                    weights: Counter[str] = Counter()
                    for h in hits[:fb]:
                        tf = Counter(terms_of[h.chunk_id].split())
                        length = sum(tf.values()) or 1
                        for t, f in tf.items():
                            weights[t] += f / length * scores[h.chunk_id] * idf.get(t, 0.0)
                    chosen = [t for t, _ in weights.most_common(n_terms + 10)]
                    chosen = [t for t in chosen if t not in terms.split()][:n_terms]
                    more = store.keyword_search(" ".join(chosen), 100, where) if chosen else []
                    expansions.append(normalised({h.chunk_id: h.score for h in more}))
                for w in (0.0, 0.2, 0.3, 0.5):
                    total = 0.0
                    for (query_id, _, _, scores), extra in zip(prepared, expansions, strict=True):
                        fused = {
                            c: (1 - w) * scores.get(c, 0.0) + w * extra.get(c, 0.0)
                            for c in {*scores, *extra}
                        }
                        ranked = [
                            d
                            for c in sorted(fused, key=lambda c: -fused[c])
                            for d in docs_of_file.get(file_of.get(c, ""), [])
                        ]
                        ranked = list(dict.fromkeys(ranked))
                        total += ndcg_at_k(ranked, data.qrels[query_id], 10)
                    row = {"split": split, "fb": fb, "terms": n_terms, "w": w}
                    print(json.dumps({**row, "bm25_ndcg@10": round(total / len(prepared), 4)}))


if __name__ == "__main__":
    main()
