"""Single sentences and triples beside sentence pairs on SciFact, against pairs alone.

The server's ``sentence_vectors`` fuses each chunk's best sentence *pair* as a third list
(``tune_sentence_vectors.py`` chose pairs). Here pieces of one, two and three sentences are
all embedded, and mixes of them are replayed through the retriever's fusion (weighted
min-max, exact similarities over every chunk, BM25's top 50 from the store): the best piece
of several sizes as one list, each size as a list of its own, the mean of a chunk's best
single and best pair, and pairs with BM25 weights 0.45 and 0.55. Each row reports nDCG@10
and the gain over pairs alone with a 95 % bootstrap interval, on train and test. Runs on an
index made by ``citewell eval``; pieces go through the embedding cache.

    CITEWELL_SENTENCE_VECTORS=true python -m benchmarks.lab.tune_sentence_mixes --data-dir <dir>
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from benchmarks.common import SCIFACT
from benchmarks.lab.tune_sentence_vectors import Index, load_index, paired, top

Lists = tuple[npt.NDArray[np.float32], dict[int, npt.NDArray[np.float32]], list]
Mix = Callable[[Lists], dict[str, float]]


def best_pieces(index: Index, vector: npt.NDArray[np.float32], chunk_sims) -> np.ndarray:
    """Each chunk's best piece (its own similarity where it has none)."""
    best = np.full(len(index.ids), -np.inf, dtype=np.float32)
    np.maximum.at(best, index.owner, index.sentence_vectors @ vector)
    return np.where(np.isfinite(best), best, chunk_sims)


def mixes(ids: list[str]) -> dict[str, Mix]:
    from citewell.retrieval.fusion import weighted_score_fusion as fuse

    def t(scores: np.ndarray) -> list[tuple[str, float]]:
        return top(ids, scores)

    return {
        "pairs": lambda q: fuse([t(q[0]), t(q[1][2]), q[2]], [0.25, 0.25, 0.5]),
        "best of 1+2": lambda q: fuse(
            [t(q[0]), t(np.maximum(q[1][1], q[1][2])), q[2]], [0.25, 0.25, 0.5]
        ),
        "best of 1+2+3": lambda q: fuse(
            [t(q[0]), t(np.maximum(np.maximum(q[1][1], q[1][2]), q[1][3])), q[2]],
            [0.25, 0.25, 0.5],
        ),
        "1, 2 as lists": lambda q: fuse(
            [t(q[0]), t(q[1][1]), t(q[1][2]), q[2]], [0.2, 0.15, 0.15, 0.5]
        ),
        "2, 3 as lists": lambda q: fuse(
            [t(q[0]), t(q[1][2]), t(q[1][3]), q[2]], [0.2, 0.15, 0.15, 0.5]
        ),
        "1, 2, 3 as lists": lambda q: fuse(
            [t(q[0]), t(q[1][1]), t(q[1][2]), t(q[1][3]), q[2]], [0.17, 0.11, 0.11, 0.11, 0.5]
        ),
        "mean of 1, 2": lambda q: fuse(
            [t(q[0]), t((q[1][1] + q[1][2]) / 2), q[2]], [0.25, 0.25, 0.5]
        ),
        "pairs, bm25 0.45": lambda q: fuse([t(q[0]), t(q[1][2]), q[2]], [0.275, 0.275, 0.45]),
        "pairs, bm25 0.55": lambda q: fuse([t(q[0]), t(q[1][2]), q[2]], [0.225, 0.225, 0.55]),
    }


def main() -> None:
    from citewell import Citewell, Settings
    from citewell.evaluation.beir import index_fingerprint, load_beir
    from citewell.evaluation.metrics import ndcg_at_k
    from citewell.retrieval import terms_string
    from citewell.types import ChunkFilter

    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    app = Citewell.from_settings(Settings.load(data_dir=args.data_dir))
    sizes = {n: load_index(app, n) for n in (1, 2, 3)}
    ids, file_of = sizes[1].ids, sizes[1].file_of
    for split in ("train", "test"):
        data = load_beir(SCIFACT, split)
        kb = app.kb_id(f"beir-{data.name}-{index_fingerprint(app, data)}")
        doc_of_file = {r.id: path for path, r in app.catalog.files_in_kb(kb).items()}
        queries: list[tuple[str, Lists]] = []
        for query_id, query in data.queries.items():
            vector = app.retriever.space.embedder.embed([query], "query")[0].astype(np.float32)
            chunk_sims = sizes[1].chunk_vectors @ vector
            best = {n: best_pieces(index, vector, chunk_sims) for n, index in sizes.items()}
            terms = terms_string(query, app.settings.retrieval.bm25_stemmer)
            hits = app.store.keyword_search(terms, 50, ChunkFilter(kb_ids=(kb,)))
            queries.append((query_id, (chunk_sims, best, [(h.chunk_id, h.score) for h in hits])))

        def ndcg(mix: Mix) -> npt.NDArray[np.float64]:
            out = []
            for query_id, lists in queries:  # noqa: B023
                ranked = sorted(mix(lists).items(), key=lambda item: (-item[1], item[0]))
                docs = list(dict.fromkeys(doc_of_file[file_of[c]] for c, _ in ranked))  # noqa: B023
                out.append(ndcg_at_k(docs, data.qrels[query_id], 10))  # noqa: B023
            return np.array(out)

        found = {name: ndcg(mix) for name, mix in mixes(ids).items()}
        for name, scores in found.items():
            row = {"split": split, "mix": name, "ndcg@10": round(float(scores.mean()), 4)}
            if name != "pairs":
                row["vs_pairs"] = paired(scores, found["pairs"])
            print(json.dumps(row), flush=True)
    app.close()


if __name__ == "__main__":
    main()
