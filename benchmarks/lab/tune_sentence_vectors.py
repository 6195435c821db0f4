"""Sentence vectors beside chunk vectors on SciFact, tuned on train, reported on test.

A chunk's vector is the mean of its ~200 tokens, so a claim that matches one sentence of
an abstract is diluted by the rest. Here every sentence of every chunk is embedded on its
own as well (the splitters' own sentence boundaries, no heading in front), and a chunk's
dense score becomes ``(1 - a) * chunk similarity + a * its best sentence's similarity``
over *every* chunk, before the top 50 go to fusion with BM25's top 50 as the retriever
does (weighted min-max, BM25 weight 0.5; chunks collapse to documents for nDCG@10).
``a = 0`` is today's hybrid. Also measured: the sentence list as a third list in fusion,
and the mixed score applied only to the candidates today's two lists found (a rescoring
stage needing no sentence index). Runs on an index made by ``citewell eval``; sentences
go through the embedding cache, so only the first run embeds them.

    python -m benchmarks.lab.tune_sentence_vectors --data-dir <eval data dir> [--window 2]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from benchmarks.common import SCIFACT

if TYPE_CHECKING:
    from citewell import Citewell

Ranked = list[tuple[str, float]]
MIN_SENTENCE = 20  # characters; shorter pieces (numbers, "Methods") say little alone


@dataclass
class Prepared:
    """One query's similarities to every chunk and to each chunk's best sentence."""

    query_id: str
    chunk_sims: npt.NDArray[np.float32]
    best: npt.NDArray[np.float32]
    bm25: Ranked


@dataclass
class Index:
    """The KB's chunks as arrays, with every sentence's vector and the chunk it lies in."""

    ids: list[str]
    file_of: dict[str, str]
    chunk_vectors: npt.NDArray[np.float32]
    sentence_vectors: npt.NDArray[np.float32]
    owner: npt.NDArray[np.int64]


Rank = Callable[[Prepared], dict[str, float]]


def top(ids: list[str], scores: npt.NDArray[np.float32], k: int = 50) -> Ranked:
    best = np.argpartition(-scores, k)[:k]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [(ids[i], float(scores[i])) for i in best]


def sentences_of(texts: list[str], window: int) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Each chunk's sentences, each joined with the ``window - 1`` after it in the chunk."""
    from citewell.splitters.semantic import sentence_spans

    pieces, owner = [], []
    for i, text in enumerate(texts):
        found = [text[s:e].lstrip("# ").strip() for s, e in sentence_spans(text)]
        found = [f for f in found if len(f) >= MIN_SENTENCE]
        for j in range(len(found)):
            pieces.append(" ".join(found[j : j + window]))
            owner.append(i)
    return pieces, np.array(owner)


def load_index(app: Citewell, window: int) -> Index:
    from citewell.stores.base import ExportsChunks

    assert isinstance(app.store, ExportsChunks)
    chunks = [c for batch in app.store.export() for c in batch]
    pieces, owner = sentences_of([c.text for c in chunks], window)
    embedder = app.retriever.space.embedder
    began = time.perf_counter()
    batches = [embedder.embed(pieces[i : i + 512], "document") for i in range(0, len(pieces), 512)]
    row = {"chunks": len(chunks), "sentences": len(pieces)}
    print(json.dumps({**row, "embed_s": round(time.perf_counter() - began, 1)}), flush=True)
    return Index(
        ids=[c.id for c in chunks],
        file_of={c.id: c.file_id for c in chunks},
        chunk_vectors=np.array([c.vector for c in chunks], dtype=np.float32),
        sentence_vectors=np.vstack(batches).astype(np.float32),
        owner=owner,
    )


def prepare(app: Citewell, index: Index, kb: str, queries: dict[str, str]) -> list[Prepared]:
    from citewell.retrieval import terms_string
    from citewell.types import ChunkFilter

    prepared = []
    for query_id, query in queries.items():
        vector = app.retriever.space.embedder.embed([query], "query")[0].astype(np.float32)
        terms = terms_string(query, app.settings.retrieval.bm25_stemmer)
        keyword = app.store.keyword_search(terms, 50, ChunkFilter(kb_ids=(kb,)))
        chunk_sims = index.chunk_vectors @ vector
        # each chunk's best sentence (its own similarity if it has none)
        best = np.full(len(index.ids), -np.inf, dtype=np.float32)
        np.maximum.at(best, index.owner, index.sentence_vectors @ vector)
        best = np.where(np.isfinite(best), best, chunk_sims)
        bm25 = [(h.chunk_id, h.score) for h in keyword]
        prepared.append(Prepared(query_id, chunk_sims, best, bm25))
    return prepared


def mixed(index: Index, a: float) -> Rank:
    """The mixed dense score over every chunk (needs a sentence index)."""
    from citewell.retrieval.fusion import weighted_score_fusion

    def rank(q: Prepared) -> dict[str, float]:
        dense = top(index.ids, (1 - a) * q.chunk_sims + a * q.best)
        return weighted_score_fusion([dense, q.bm25], [0.5, 0.5])

    return rank


def rescored(index: Index, a: float) -> Rank:
    """The mixed score for today's vector candidates only (no sentence index needed)."""
    from citewell.retrieval.fusion import weighted_score_fusion

    def rank(q: Prepared) -> dict[str, float]:
        found = np.argsort(-q.chunk_sims, kind="stable")[:50]
        scores = (1 - a) * q.chunk_sims[found] + a * q.best[found]
        dense = [(index.ids[i], float(s)) for i, s in zip(found, scores, strict=True)]
        return weighted_score_fusion([dense, q.bm25], [0.5, 0.5])

    return rank


def third_list(index: Index, share: float) -> Rank:
    """The best-sentence list fused as a third list, ``share`` of the dense weight."""
    from citewell.retrieval.fusion import weighted_score_fusion

    def rank(q: Prepared) -> dict[str, float]:
        lists = [top(index.ids, q.chunk_sims), top(index.ids, q.best), q.bm25]
        return weighted_score_fusion(lists, [0.5 * (1 - share), 0.5 * share, 0.5])

    return rank


def per_query(
    prepared: list[Prepared],
    rank: Rank,
    docs_of: Callable[[dict[str, float]], list[str]],
    qrels: dict[str, dict[str, int]],
) -> npt.NDArray[np.float64]:
    """nDCG@10 of each query, in ``prepared``'s order."""
    from citewell.evaluation.metrics import ndcg_at_k

    return np.array([ndcg_at_k(docs_of(rank(q)), qrels[q.query_id], 10) for q in prepared])


def paired(new: npt.NDArray[np.float64], old: npt.NDArray[np.float64]) -> dict[str, object]:
    """The mean gain over today, queries better and worse, and a 95 % bootstrap interval
    of the mean gain (queries resampled with replacement, 5,000 times, seed 1)."""
    gain = new - old
    rng = np.random.default_rng(1)
    means = [float(rng.choice(gain, len(gain)).mean()) for _ in range(5000)]
    low, high = np.percentile(means, [2.5, 97.5])
    return {
        "gain": round(float(gain.mean()), 4),
        "better": int((gain > 1e-9).sum()),
        "worse": int((gain < -1e-9).sum()),
        "ci95": [round(float(low), 4), round(float(high), 4)],
    }


def main() -> None:
    from citewell import Citewell, Settings
    from citewell.evaluation.beir import index_fingerprint, load_beir

    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument(
        "--window", type=int, default=1, help="sentences per piece: each with the next N-1"
    )
    args = parser.parse_args()
    app = Citewell.from_settings(Settings.load(data_dir=args.data_dir))
    index = load_index(app, args.window)
    for split in ("train", "test"):
        data = load_beir(SCIFACT, split)
        kb = app.kb_id(f"beir-{data.name}-{index_fingerprint(app, data)}")
        doc_of_file = {r.id: path for path, r in app.catalog.files_in_kb(kb).items()}

        def docs_of(fused: dict[str, float]) -> list[str]:
            ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
            return list(dict.fromkeys(doc_of_file[index.file_of[c]] for c, _ in ranked))  # noqa: B023

        prepared = prepare(app, index, kb, data.queries)
        today = per_query(prepared, mixed(index, 0.0), docs_of, data.qrels)
        for a in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
            found = per_query(prepared, mixed(index, a), docs_of, data.qrels)
            again = per_query(prepared, rescored(index, a), docs_of, data.qrels)
            row = {"split": split, "a": a, "mixed": round(float(found.mean()), 4)}
            row["rescored_pool"] = round(float(again.mean()), 4)
            print(json.dumps({**row, "mixed_vs_today": paired(found, today)}), flush=True)
        for share in (0.2, 0.3, 0.4, 0.5):
            found = per_query(prepared, third_list(index, share), docs_of, data.qrels)
            row = {
                "split": split,
                "third_list_share": share,
                "ndcg@10": round(float(found.mean()), 4),
            }
            print(json.dumps({**row, "vs_today": paired(found, today)}), flush=True)
    app.close()


if __name__ == "__main__":
    main()
