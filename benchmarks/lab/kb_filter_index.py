"""What a LabelList index on ``kb_ids`` does for KB-filtered searches, side by side.

Two LanceChunkStores of ROWS synthetic chunks each (the same rows): random unit vectors,
60 words each from a 5,000-word vocabulary, every chunk in one of KBS knowledge bases. Both
get the vector index and full-text index as in production; only the second has a LabelList
index on kb_ids. Then QUERIES searches, alternating between the two: vector and keyword, each
filtered to one KB (as every signed-in search is) and unfiltered for reference.

    python -m benchmarks.lab.kb_filter_index --rows 100000 --kbs 100 --queries 40
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from citewell.stores.lance.store import LanceChunkStore
from citewell.types import ChunkFilter, StoredChunk


def build(path: Path, rows: int, kbs: int, seed: int) -> LanceChunkStore:
    rng, words = random.Random(seed), [f"w{i}" for i in range(5000)]
    vectors = np.random.default_rng(seed).normal(size=(rows, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = LanceChunkStore(path, "chunks", 384)
    for start in range(0, rows, 5000):
        chunks = [
            StoredChunk(
                f"c{i}",
                f"f{i // 10}",
                (f"kb{i % kbs}",),
                i % 10,
                "",
                0,
                0,
                None,
                (),
                "x",
                " ".join(rng.choices(words, k=60)),
                tuple(vectors[i].tolist()),
            )  # fmt: skip
            for i in range(start, min(rows, start + 5000))
        ]
        store.upsert(chunks)
    store.optimize()
    return store


def timings(store: LanceChunkStore, queries: list[tuple[np.ndarray, str, str]]) -> dict:
    out: dict[str, list[float]] = {"vector_kb": [], "vector_all": [], "fts_kb": [], "fts_all": []}
    for vector, terms, kb in queries:
        for name, where in (("kb", ChunkFilter(kb_ids=(kb,))), ("all", ChunkFilter())):
            began = time.perf_counter()
            store.vector_search(vector.tolist(), 50, where)
            out[f"vector_{name}"].append(time.perf_counter() - began)
            began = time.perf_counter()
            store.keyword_search(terms, 50, where)
            out[f"fts_{name}"].append(time.perf_counter() - began)
    return {k: round(statistics.median(v) * 1000, 2) for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--kbs", type=int, default=100)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp())
    plain = build(root / "plain", args.rows, args.kbs, seed=1)
    labelled = build(root / "labelled", args.rows, args.kbs, seed=1)
    from lancedb.index import LabelList

    labelled._table.create_index("kb_ids", config=LabelList())
    rng = np.random.default_rng(7)
    queries = []
    for i in range(args.queries):
        vector = rng.normal(size=384).astype(np.float32)
        terms = " ".join(f"w{j}" for j in rng.integers(0, 5000, size=4))
        queries.append((vector / np.linalg.norm(vector), terms, f"kb{i % args.kbs}"))
    rounds = {"plain": [], "labelled": []}  # type: dict[str, list[dict]]
    for _ in range(3):
        rounds["plain"].append(timings(plain, queries))
        rounds["labelled"].append(timings(labelled, queries))
    result = {
        name: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        for name, runs in rounds.items()
    }
    print(json.dumps({"rows": args.rows, "kbs": args.kbs, "median_ms": result}, indent=2))


if __name__ == "__main__":
    main()
