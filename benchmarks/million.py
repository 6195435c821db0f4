"""The embedded store grown from SciFact's 10,857 chunks to a million, measured at each size.

How the rows are made (seeded, so two runs build the same table):

* Copy 0 is SciFact itself: the chunks, terms and vectors of an ingested SciFact data dir
  (``--source``; ingested first if it is not there yet, about 11 minutes).
* Copy n >= 1 of chunk i is a new file ``copy{n}-{file}``: the chunk's sentences shuffled,
  one of them swapped for a sentence of another random chunk, and one random token
  (``zq`` + 6 hex digits) appended; its BM25 terms are computed from that text as ingestion
  would. Its vector is chunk i's plus Gaussian noise (sigma 0.025 per dimension, so a
  cosine of about 0.9 to the original), normalised.
* Every row is in two knowledge bases: ``kb-all`` (one KB of every chunk) and one of 100
  (``kb-00`` .. ``kb-99``, by file), so one table serves both layouts.

Rows go in through ``LanceChunkStore.upsert`` in batches of ``--batch`` with ``optimize``
after each, as ingestion does. At each size in ``--sizes`` it measures, with the 300 SciFact
test queries embedded per query (no cache): hybrid search p50/p95 at k=8 in kb-all, in one
of the 100 KBs, in three of them together and unfiltered; ANN recall@50 against an exact
search with the same filter; and the time of one 256-chunk upsert of new rows and of the
optimize after it.

    python -m benchmarks.million --source /tmp/scifact --work /tmp/million \
        --sizes 10857 100000 300000 1000000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import shutil
import statistics
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

import numpy as np  # noqa: E402

from benchmarks.common import open_scifact_index  # noqa: E402
from citewell.config import Settings  # noqa: E402
from citewell.machine import memory_free_bytes  # noqa: E402
from citewell.retrieval.retriever import HybridRetriever, RetrievalSettings  # noqa: E402
from citewell.retrieval.tokenize import terms_string  # noqa: E402
from citewell.stores.lance.store import LanceChunkStore  # noqa: E402
from citewell.stores.registry import table_copy_budget_mb  # noqa: E402
from citewell.types import ChunkFilter, SearchMode, StoredChunk  # noqa: E402

SENTENCE = re.compile(r"(?<=[.!?])\s+")
SIGMA = 0.025
KBS = 100
# Disk a million rows take: at three million the LanceDB table held 15 GB (docs/benchmarks/
# journal.md, "A compact copy", 3M); the machine's copy 2.2 GB a million (decision 0043).
DISK_PER_MILLION = 7.2e9


def source_rows(source: Path) -> tuple[list[dict[str, Any]], np.ndarray, Any, list[str]]:
    """SciFact's chunks (rows without vectors), their vectors, the embedder, the queries."""
    app, data, _kb = open_scifact_index(source)
    table = app.store._table.to_arrow().sort_by("id")
    vectors = table["vector"].combine_chunks().flatten().to_numpy().reshape(table.num_rows, -1)
    rows = table.drop_columns(["vector"]).to_pylist()
    embedder = app.retriever.space.embedder.inner  # uncached: every query is embedded
    return rows, vectors.astype(np.float32), embedder, list(data.queries.values())


def kb_of(file_id: str) -> str:
    return f"kb-{sum(file_id.encode()) % KBS:02d}"


def copy_chunk(rows: list[dict[str, Any]], vectors: np.ndarray, i: int, n: int, rng) -> StoredChunk:
    row = rows[i]
    sentences = SENTENCE.split(row["text"])
    rng.shuffle(sentences)
    other = SENTENCE.split(rows[rng.randrange(len(rows))]["text"])
    sentences[rng.randrange(len(sentences))] = rng.choice(other)
    text = " ".join(sentences) + f" zq{rng.getrandbits(24):06x}"
    noise = np.random.default_rng(rng.getrandbits(32)).normal(0, SIGMA, vectors.shape[1])
    vector = vectors[i] + noise.astype(np.float32)
    file_id = f"copy{n}-{row['file_id']}"
    return StoredChunk(
        id=f"c{n}-{row['id']}",
        file_id=file_id,
        kb_ids=("kb-all", kb_of(file_id)),
        index=row["idx"],
        text=text,
        start=0,
        end=len(text),
        page=None,
        headings=tuple(row["headings"] or ()),
        file_name=f"copy{n}-{row['file_name']}",
        terms=terms_string(text),
        vector=tuple((vector / np.linalg.norm(vector)).tolist()),
    )


def originals(rows: list[dict[str, Any]], vectors: np.ndarray) -> list[StoredChunk]:
    return [
        StoredChunk(
            id=r["id"],
            file_id=r["file_id"],
            kb_ids=("kb-all", kb_of(r["file_id"])),
            index=r["idx"],
            text=r["text"],
            start=r["start"],
            end=r["end"],
            page=r["page"],
            headings=tuple(r["headings"] or ()),
            file_name=r["file_name"],
            terms=r["terms"],
            vector=tuple(vectors[i].tolist()),
        )  # fmt: skip
        for i, r in enumerate(rows)
    ]


def copies(rows, vectors, start: int, count: int, seed: int) -> list[StoredChunk]:
    """Rows start .. start+count of the endless sequence of copies (copy 1 of every chunk,
    then copy 2, ...), each from its own seeded generator."""
    out = []
    for position in range(start, start + count):
        n, i = divmod(position, len(rows))
        out.append(copy_chunk(rows, vectors, i, n + 1, random.Random(seed * 1_000_003 + position)))
    return out


def exact_ids(store: LanceChunkStore, vector: np.ndarray, k: int, where: ChunkFilter) -> set[str]:
    query = store._table.search(vector.tolist()).distance_type("cosine").bypass_vector_index()
    from citewell.stores.lance.tables import where_sql

    predicate = where_sql(where)
    if predicate:
        query = query.where(predicate, prefilter=True)
    return {r["id"] for r in query.select(["id"]).limit(k).to_list()}


def measure(store, embedder, queries: list[str], samples: int, rng) -> dict[str, Any]:
    retriever = HybridRetriever(store, embedder, RetrievalSettings())
    filters = {
        "kb_all": lambda: ChunkFilter(kb_ids=("kb-all",)),
        "one_of_100": lambda: ChunkFilter(kb_ids=(f"kb-{rng.randrange(KBS):02d}",)),
        # Several KBs searched together: keyword statistics of their union (issue 45).
        "three_of_100": lambda: ChunkFilter(
            kb_ids=tuple(f"kb-{k:02d}" for k in rng.sample(range(KBS), 3))
        ),
        "unfiltered": ChunkFilter,
    }
    out: dict[str, Any] = {"rows": store._table.count_rows()}
    for name, make in filters.items():
        times = []
        for query in queries:
            began = time.perf_counter()
            retriever.search(query, make(), 8, SearchMode.HYBRID)
            times.append((time.perf_counter() - began) * 1000)
        recalls = []
        for query in queries[:samples]:
            where = make()
            vector = embedder.embed([query], "query")[0]
            found = {h.chunk_id for h in store.vector_search(vector.tolist(), 50, where)}
            truth = exact_ids(store, vector, 50, where)
            recalls.append(len(found & truth) / max(1, len(truth)))
        out[name] = {
            "hybrid_p50_ms": round(statistics.median(times), 1),
            "hybrid_p95_ms": round(sorted(times)[int(len(times) * 0.95)], 1),
            "recall_at_50": round(statistics.mean(recalls), 3),
        }
    return out


def compare(  # noqa: PLR0913
    small,
    big,
    embedder,
    queries: list[str],
    rng,
    warmup: int,
    active: int = KBS,
    settle: float = 0,
    passes: int = 1,
) -> dict[str, Any]:
    """Hybrid search at k=8 on the small and the big table, alternating query by query (so
    both see the same machine load), in kb-all and in one of the 100 KBs; with the median
    of each step from the retrieval trace. The first ``warmup`` queries (other ones than
    those measured) are not timed: a server answers many, and the store loads its indexes
    into memory when it opens a big table. "One of 100" picks among the first ``active`` of
    the 100 KBs (all of them by default): a server keeps in-memory copies of as many
    recently searched KBs as its kb_snapshot_mb allows. ``passes``: the warm-up queries run
    that many times, each time in a random KB (a server searched evenly across 100 KBs for
    a while has seen each of them many times, which 300 test queries cannot show)."""
    from citewell.retrieval.retriever import RetrievalTrace

    retrievers = {
        "small": HybridRetriever(small, embedder, RetrievalSettings()),
        "big": HybridRetriever(big, embedder, RetrievalSettings()),
    }
    for query in queries[len(queries) - warmup :] * passes:
        kb = f"kb-{rng.randrange(active):02d}"
        for retriever in retrievers.values():
            for where in (("kb-all",), (kb,)):
                retriever.search(query, ChunkFilter(kb_ids=where), 8, SearchMode.HYBRID)
    time.sleep(settle)  # in-memory KB copies asked for during the warm-up are made meanwhile
    copy_wait = wait_for_table_copy(big)
    queries = queries[: len(queries) - warmup]
    times: dict[str, list[float]] = {}
    steps: dict[str, dict[str, list[float]]] = {}
    for query in queries:
        kb = f"kb-{rng.randrange(active):02d}"
        for name, retriever in retrievers.items():
            for layout, where in (("kb_all", ("kb-all",)), ("one_of_100", (kb,))):
                trace = RetrievalTrace()
                began = time.perf_counter()
                retriever.search(query, ChunkFilter(kb_ids=where), 8, SearchMode.HYBRID, trace)
                key = f"{name}_{layout}"
                times.setdefault(key, []).append((time.perf_counter() - began) * 1000)
                for step, ms in trace.timings.items():
                    steps.setdefault(key, {}).setdefault(step, []).append(ms)
    result: dict[str, Any] = {
        key: {
            "rows": (small if key.startswith("small") else big)._table.count_rows(),
            "hybrid_p50_ms": round(statistics.median(values), 1),
            "hybrid_p95_ms": round(sorted(values)[int(len(values) * 0.95)], 1),
            "steps_p50_ms": {s: round(statistics.median(v), 1) for s, v in steps[key].items()},
        }
        for key, values in times.items()
    }
    result["big_kb_copies"] = dataclasses.asdict(big.kb_copies())  # searched from memory?
    result["big_table_copy"] = {**dataclasses.asdict(big.table_copy(20)), "waited_s": copy_wait}
    return result


def small_table(work: Path, rows, vectors: np.ndarray) -> LanceChunkStore:
    """SciFact alone, made afresh (the write rounds add to it)."""
    shutil.rmtree(work / "small", ignore_errors=True)
    small = LanceChunkStore(work / "small", "chunks", vectors.shape[1])
    small.upsert(originals(rows, vectors))
    small.optimize()
    small.warm_searches()
    return small


def wait_for_table_copy(store, limit: float = 1800.0) -> float:
    """With table_copy_mb set, wait until the whole table's copy is made (after the table
    has been quiet for 20 s, tens of seconds at a million rows); the seconds waited."""
    began = time.perf_counter()
    if store.table_copy().budget_mb <= 0:
        return 0.0
    while store._current_snapshot() is None and time.perf_counter() - began < limit:
        time.sleep(1.0)
    return round(time.perf_counter() - began, 1)


def write_cost(
    store, rows, vectors, position: int, seed: int, batches: int = 1
) -> dict[str, float]:
    """``batches`` upserts of 256 new chunks, then one optimize (ingestion optimizes once per
    eight batches while its queue stays busy): the upserts' mean, the optimize, and what
    each 256 chunks cost in all."""
    made = [copies(rows, vectors, position + 256 * n, 256, seed + 7) for n in range(batches)]
    began = time.perf_counter()
    for batch in made:
        store.upsert(batch)
    upserts = time.perf_counter() - began
    began = time.perf_counter()
    store.optimize()
    optimize = time.perf_counter() - began
    return {
        "upsert_256_s": round(upserts / batches, 3),
        "optimize_s": round(optimize, 3),
        "per_256_s": round((upserts + optimize) / batches, 3),
    }


@dataclass
class Training:
    """``citewell check --repair``'s training of the vector index, in a thread: the store
    builds it beside the writes. ``seconds``: how long it took, once done."""

    store: LanceChunkStore
    seconds: float = 0.0

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._train, name="benchmark-training")
        thread.start()
        time.sleep(1.0)  # it has read the table's version before the first write
        return thread

    def _train(self) -> None:
        began = time.perf_counter()
        self.store.rebuild_vector_index()
        self.seconds = round(time.perf_counter() - began, 1)


def split_by_training(runs: list[dict[str, float]]) -> dict[str, Any]:
    """The big table's cost per 256 chunks in rounds begun while the training ran, and after."""
    parts: dict[str, Any] = {}
    for label, flag in (("during", 1.0), ("after", 0.0)):
        costs = [w["per_256_s"] for w in runs if w["during_training"] == flag]
        if costs:
            parts[label] = {
                "rounds": len(costs),
                "median": statistics.median(costs),
                "mean": round(statistics.mean(costs), 3),
            }
    return parts


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", type=Path, required=True, help="SciFact data dir")
    parser.add_argument("--work", type=Path, required=True, help="where the big table goes")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10857, 100_000, 1_000_000])
    parser.add_argument("--batch", type=int, default=25_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--recall-samples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--skip-disk-check", action="store_true", help="build even where the disk looks short"
    )
    parser.add_argument("--write-rounds", type=int, default=40, help="256-chunk writes (--compare)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed queries first (--compare)")
    parser.add_argument(
        "--active-kbs",
        type=int,
        default=KBS,
        help="--compare: searches in one of 100 KBs pick among this many of them",
    )
    parser.add_argument(
        "--warmup-passes", type=int, default=1, help="--compare: run the warm-up this many times"
    )
    parser.add_argument(
        "--settle", type=float, default=10.0, help="--compare: seconds between warm-up and timing"
    )
    parser.add_argument(
        "--kb-snapshot-mb", type=int, default=512, help="the big table's kb_snapshot_mb"
    )
    parser.add_argument(
        "--table-copy-mb",
        type=lambda text: text if text == "auto" else int(text),
        default="auto",
        help="the big table's table_copy_mb (default auto, as the server's; 0: no copy): "
        "searches wait for the copy before timing",
    )
    parser.add_argument(
        "--no-writes", action="store_true", help="--compare: searches only, no write rounds"
    )
    parser.add_argument(
        "--upserts-per-optimize",
        type=int,
        default=1,
        help="--compare: 256-chunk upserts in each write round before its optimize",
    )
    parser.add_argument(
        "--small-max-rows",
        type=int,
        default=0,
        help="--compare: make the small table afresh (untimed) once the write rounds have "
        "grown it past this many rows, so long runs compare against a small table",
    )
    parser.add_argument(
        "--train-during-writes",
        action="store_true",
        help="--compare: train the big table's vector index anew as the write rounds begin "
        "(in the background, as the store does when the table has doubled)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="only measure: SciFact alone against the grown table, side by side",
    )
    return parser.parse_args()


def check_disk(work: Path, size: int, have: int) -> None:
    """Refuse, before hours of building, a size this disk cannot hold."""
    needed = max(0, size - have) / 1e6 * DISK_PER_MILLION
    free = shutil.disk_usage(work).free
    if needed > free:
        raise SystemExit(
            f"{size:,} rows need about {needed / 1e9:.0f} GB more under {work} (about "
            f"{DISK_PER_MILLION / 1e9:.1f} GB a million: the LanceDB table and the machine's "
            f"copy); {free / 1e9:.0f} GB are free. Free some, give --work on a bigger disk, "
            "or pass --skip-disk-check."
        )


def main() -> None:
    args = parse_args()
    rows, vectors, embedder, queries = source_rows(args.source)
    queries = queries[: args.queries + (args.warmup if args.compare else 0)]
    store = LanceChunkStore(
        args.work / "lancedb",
        "chunks",
        vectors.shape[1],
        kb_snapshot_mb=args.kb_snapshot_mb,
        table_copy_mb=table_copy_budget_mb(Settings(table_copy_mb=args.table_copy_mb)),
        memory_free=memory_free_bytes,
    )
    store.warm_searches()  # searched as a server searches: its indexes loaded
    if args.compare:
        small = small_table(args.work, rows, vectors)
        rng = random.Random(args.seed)
        result = compare(
            small,
            store,
            embedder,
            queries,
            rng,
            args.warmup,
            args.active_kbs,
            args.settle,
            args.warmup_passes,
        )
        if args.no_writes:
            print(json.dumps(result, indent=1))
            return
        writes: dict[str, list[dict[str, float]]] = {"small": [], "big": []}
        fresh = 20_000_000 + int(time.time()) % 100_000 * 100_000  # rows no run wrote before
        per = args.upserts_per_optimize
        training = Training(store) if args.train_during_writes else None
        thread = training.start() if training is not None else None
        for n in range(args.write_rounds):  # alternating, new rows each time
            if args.small_max_rows and small._table.count_rows() > args.small_max_rows:
                small = small_table(args.work, rows, vectors)  # untimed: small again
            for name, target in (("small", small), ("big", store)):
                position = fresh + 1000 * per * n + (500 * per if name == "big" else 0)
                during = thread is not None and thread.is_alive()
                cost = write_cost(target, rows, vectors, position, args.seed, per)
                writes[name].append({**cost, "during_training": float(during)})
        if training is not None and thread is not None:
            thread.join()
            result["training_s"] = training.seconds
            result["big_by_training"] = split_by_training(writes["big"])
        result["writes_median_s"] = {
            name: {key: statistics.median(w[key] for w in runs) for key in runs[0]}
            for name, runs in writes.items()
        }
        result["writes_mean_s"] = {  # compactions included: what a long ingest pays
            name: {key: round(statistics.mean(w[key] for w in runs), 3) for key in runs[0]}
            for name, runs in writes.items()
        }
        print(json.dumps(result, indent=1))
        return
    if store._table.count_rows() == 0:
        store.upsert(originals(rows, vectors))
        store.optimize()
    if not args.skip_disk_check:
        check_disk(args.work, max(args.sizes), store._table.count_rows())
    rng = random.Random(args.seed)
    for size in sorted(args.sizes):
        while (have := store._table.count_rows()) < size:
            began = time.perf_counter()
            store.upsert(
                copies(rows, vectors, have - len(rows), min(args.batch, size - have), args.seed)
            )
            store.optimize()
            print(
                f"# {store._table.count_rows()} rows (+{time.perf_counter() - began:.1f} s)",
                flush=True,
            )
        copy_wait = wait_for_table_copy(store)
        result = {"size": size, **measure(store, embedder, queries, args.recall_samples, rng)}
        result["table_copy"] = {**dataclasses.asdict(store.table_copy()), "waited_s": copy_wait}
        result.update(write_cost(store, rows, vectors, 10_000_000 + size, args.seed))
        result["index"] = asdict(store.health(0))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
