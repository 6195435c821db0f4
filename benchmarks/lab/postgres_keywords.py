"""PostgreSQL's keyword search without a copy (the SQL fallback): disk, latency, agreement.

Fills a PostgresChunkStore with SciFact abstracts and noisy copies of them (one chunk a
file, random vectors: only keyword search is measured, so the HNSW index is dropped before
the load), then:
- disk per relation (heap, TOAST, each index, the BM25 tables);
- ``keyword_search`` at k=10 over SciFact's queries, whole table and one KB of 100, with no
  copy in memory (the path a search takes before a machine's copy is current);
- how many of the top 10 agree with an exhaustive BM25 computed here over every row, with
  the statistics the store uses (the table's, or the KB's for the KB).

    python -m benchmarks.lab.postgres_keywords --rows 200000 --pg-root /tmp/pgkw

Run it in two trees with the same arguments (another ``--pg-root`` each) to compare them.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import time
from collections import Counter
from pathlib import Path

import numpy as np
from sqlalchemy import text

from citewell.db.engine import url_engine
from citewell.retrieval.tokenize import terms_string
from citewell.stores.postgres.store import PostgresChunkStore
from citewell.testing.postgres import EmbeddedPostgres
from citewell.types import ChunkFilter, StoredChunk

SENTENCE = re.compile(r"(?<=[.!?])\s+")
K1, B, KBS, DIM = 1.2, 0.75, 100, 384


def corpus(scifact: Path) -> list[str]:
    docs = [json.loads(line) for line in (scifact / "corpus.jsonl").open()]
    return [f"{d['title']}. {d['text']}" for d in docs]


def chunk_text(texts: list[str], position: int) -> str:
    """Row ``position``: SciFact's texts first, then noisy copies (sentences shuffled, one
    taken from another text, a unique token), each seeded by its position."""
    n, i = divmod(position, len(texts))
    if n == 0:
        return texts[i]
    rng = random.Random(position)
    sentences = SENTENCE.split(texts[i])
    rng.shuffle(sentences)
    sentences[rng.randrange(len(sentences))] = rng.choice(SENTENCE.split(rng.choice(texts)))
    return " ".join(sentences) + f" zq{rng.getrandbits(24):06x}"


def make_chunk(position: int, body: str, vector: np.ndarray) -> StoredChunk:
    file_id = f"f{position}"
    return StoredChunk(
        id=f"c{position}", file_id=file_id, kb_ids=("kb-all", f"kb-{position % KBS:02d}"),
        index=0, text=body, start=0, end=len(body), page=None, headings=(),
        file_name=f"{file_id}.txt", terms=terms_string(body), vector=tuple(vector.tolist()),
    )  # fmt: skip


def load(store: PostgresChunkStore, texts: list[str], rows: int) -> tuple[list[str], float]:
    """Every row's terms (for the exhaustive BM25), and the seconds the load took."""
    with store.engine.begin() as db:
        db.execute(text(f"DROP INDEX IF EXISTS {store.table}_hnsw"))
    rng = np.random.default_rng(7)
    terms: list[str] = []
    began = time.perf_counter()
    for start in range(0, rows, 2000):
        vectors = rng.normal(size=(min(2000, rows - start), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        batch = [
            make_chunk(p, chunk_text(texts, p), vectors[p - start])
            for p in range(start, start + len(vectors))
        ]
        store.upsert(batch)
        terms.extend(c.terms for c in batch)
    store.optimize()
    return terms, time.perf_counter() - began


def write_256(store: PostgresChunkStore, texts: list[str], rows: int) -> list[float]:
    """Seconds of three 256-chunk upserts of new rows into the full table (removed after,
    so the searches see the table as loaded)."""
    rng, took = np.random.default_rng(11), []
    for n in range(3):
        vectors = rng.normal(size=(256, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        first = rows + 10_000 * (n + 1)
        batch = [make_chunk(first + i, chunk_text(texts, i), vectors[i]) for i in range(256)]
        began = time.perf_counter()
        store.upsert(batch)
        took.append(round(time.perf_counter() - began, 3))
        store.delete(ChunkFilter(file_ids=tuple(c.file_id for c in batch)))
    return took


def disk(store: PostgresChunkStore) -> dict[str, int]:
    """Bytes of every relation whose name starts with the table's."""
    with store.engine.connect() as db:
        found = db.execute(
            text(
                "SELECT c.relname, pg_relation_size(c.oid) + coalesce(pg_relation_size("
                "nullif(c.reltoastrelid, 0)), 0) FROM pg_class c "
                "WHERE c.relname LIKE :prefix AND c.relkind IN ('r', 'i')"
            ),
            {"prefix": f"{store.table}%"},
        ).all()
    return {name: int(size) for name, size in sorted(found)}


class Exhaustive:
    """BM25 over every row, as the stores score it (k1 1.2, b 0.75, idf ln((N+1)/(df+0.5)))."""

    def __init__(self, terms: list[str], keep: list[int]) -> None:
        self.rows = keep
        self.counts = [Counter(terms[i].split()) for i in keep]
        self.lengths = [sum(c.values()) for c in self.counts]
        self.average = sum(self.lengths) / max(1, len(keep))
        self.index: dict[str, list[int]] = {}
        for j, counts in enumerate(self.counts):
            for term in counts:
                self.index.setdefault(term, []).append(j)

    def top(self, words: list[str], k: int) -> list[str]:
        n, scores = len(self.rows), Counter[int]()
        for term, times in Counter(words).items():
            found = self.index.get(term, [])
            idf = math.log((n + 1) / (len(found) + 0.5))
            for j in found:
                tf = self.counts[j][term]
                norm = K1 * (1 - B + B * self.lengths[j] / self.average)
                scores[j] += times * idf * tf * (K1 + 1) / (tf + norm)
        best = sorted(scores.items(), key=lambda s: (-s[1], f"c{self.rows[s[0]]}"))[:k]
        return [f"c{self.rows[j]}" for j, _ in best]


class InSql:
    """The exhaustive BM25 computed by PostgreSQL (for tables too big for ``Exhaustive``'s
    counts in memory): the store's keyword index with every term and no bound on rows."""

    def __init__(self, store: PostgresChunkStore, where: ChunkFilter) -> None:
        from citewell.stores.postgres.bm25 import KeywordIndex
        from citewell.stores.postgres.sql import filter_sql

        self.store, self.where = store, where
        self.every = KeywordIndex(store.table, budget=10**9, rescore=10**9)
        self.condition, self.params = filter_sql(where, "c")

    def top(self, words: list[str], k: int) -> list[str]:
        scope = None
        if self.where.kb_ids is not None:
            scope = self.store._scopes.get(self.where)
        with self.store.engine.connect() as db:
            found = self.every.search(db, words, k, self.condition, self.params, "few", scope)
        return [row.id for row in found]


def measure(store, queries: list[str], truth: Exhaustive | InSql, where: ChunkFilter) -> dict:
    times, agree = [], []
    for query in queries:
        words = terms_string(query)
        began = time.perf_counter()
        hits = store.keyword_search(words, 10, where)
        times.append((time.perf_counter() - began) * 1000)
        exact = truth.top(words.split(), 10)
        if exact:
            agree.append(len({h.chunk_id for h in hits} & set(exact)) / len(exact))
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
        "top10_agreement": round(statistics.mean(agree), 4),
        "worst": round(min(agree), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--pg-root", type=Path, required=True)
    parser.add_argument("--scifact", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--budgets", type=int, nargs="*", help="rows a search may find")
    parser.add_argument("--rescores", type=int, nargs="*", help="of them, scored exactly")
    parser.add_argument(
        "--exhaustive-in-sql", action="store_true", help="the truth from PostgreSQL (big tables)"
    )
    args = parser.parse_args()
    texts = corpus(args.scifact)
    queries = [json.loads(line)["text"] for line in (args.scifact / "queries.jsonl").open()]
    queries = queries[: args.queries]
    pg = EmbeddedPostgres(args.pg_root, {"shared_buffers": "2GB", "maintenance_work_mem": "1GB"})
    pg.start()
    try:
        engine = url_engine(pg.create_database())
        store = PostgresChunkStore(engine, "kw", DIM)
        terms, seconds = load(store, texts, args.rows)
        report: dict = {"rows": args.rows, "load_s": round(seconds, 1), "disk": disk(store)}
        report["write_256_s"] = write_256(store, texts, args.rows)
        one_kb = ChunkFilter(kb_ids=("kb-07",))
        whole: Exhaustive | InSql = InSql(store, ChunkFilter())
        kb: Exhaustive | InSql = InSql(store, one_kb)
        if not args.exhaustive_in_sql:
            whole = Exhaustive(terms, list(range(args.rows)))
            kb = Exhaustive(terms, [i for i in range(args.rows) if i % KBS == 7])
        del terms
        settings = [(b, r) for b in args.budgets or [None] for r in args.rescores or [None]]
        for budget, rescore in settings:
            name = ""
            if budget is not None:  # the keyword index's (trees since it has one)
                store.bm25.budget, name = budget, f" budget {budget}"
            if rescore is not None:
                store.bm25.rescore, name = rescore, f"{name} rescore {rescore}"
            report["all" + name] = measure(store, queries, whole, ChunkFilter())
            report["one_kb" + name] = measure(store, queries, kb, one_kb)
        print(json.dumps(report, indent=1))
        engine.dispose()
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
