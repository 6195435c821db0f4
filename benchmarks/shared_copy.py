"""`serve --workers 4` on a big table: the machine's one shared copy against a copy per
process (``table_copy_shared`` on and off), side by side on the same data dir.

The data dir is built once (``--rows``, default a million) through ``citewell import``: SciFact's
chunks (an ingested SciFact data dir, ``--source``) and noisy copies of them made as
``million.py`` makes them (sentences shuffled, one swapped, a random token added; vector plus
Gaussian noise, sigma 0.025), each copy of a SciFact file a file of its own (about two
chunks a file), all in one knowledge base.

For each setting a server is started with ``--workers``, the copies awaited (workers must
report ``table_copy.current``, or ``too_big``, through ``GET /api/v1/stats/store``);
meanwhile ``2 x workers`` clients search every two seconds, each on its own connection, so
that every worker makes or maps its copy (on its first search; a copy is made at the lowest
priority, so a saturated server would put it off). Then ``--queries`` SciFact test queries
are searched one after another on one connection (hybrid, k=8, after 20 untimed), and
the memory of the server's process tree read from ``/proc/PID/smaps_rollup``: PSS (each
shared page divided among the processes that map it) and RSS, summed, and each process's
private and shared megabytes.

    .venv/bin/python -m benchmarks.shared_copy --source /tmp/scifact --work /tmp/shared \
        --rows 1000000 --workers 4
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import open_scifact_index
from citewell.testing.served import kill, start_server

SENTENCE = re.compile(r"(?<=[.!?])\s+")
SIGMA = 0.025
PARQUET_ROWS = 100_000  # rows a row group
KB = "all"
PORT = 8731


def source_rows(source: Path) -> tuple[list[dict[str, Any]], np.ndarray, list[str]]:
    app, data, _kb = open_scifact_index(source)
    table = app.store._table.to_arrow().sort_by([("file_id", "ascending"), ("idx", "ascending")])
    vectors = table["vector"].combine_chunks().flatten().to_numpy().reshape(table.num_rows, -1)
    rows = table.select(["file_id", "file_name", "text"]).to_pylist()
    app.close()
    return rows, vectors.astype(np.float32), list(data.queries.values())


def noisy(row: dict[str, Any], other: str, vector: np.ndarray, rng: random.Random) -> tuple:
    sentences = SENTENCE.split(row["text"])
    rng.shuffle(sentences)
    sentences[rng.randrange(len(sentences))] = rng.choice(SENTENCE.split(other))
    text = " ".join(sentences) + f" zq{rng.getrandbits(24):06x}"
    moved = vector + np.random.default_rng(rng.getrandbits(32)).normal(0, SIGMA, len(vector))
    return text, (moved / np.linalg.norm(moved)).astype(np.float32)


def write_parquet(  # noqa: PLR0913
    path: Path, rows, vectors: np.ndarray, count: int, per_file: int = 1, begin: int = 0,
    seed: int = 11,
) -> None:  # fmt: skip
    """Chunks ``begin`` .. ``count`` of the endless sequence of copies (copy 0 is SciFact),
    written a row group at a time (ten million at once would not fit in memory);
    ``per_file`` > 1 puts that many chunks of a copy in one file (fewer stored texts: each
    file keeps at least 4 KB a blob, three blobs)."""
    schema = pa.schema([
        ("file", pa.string()), ("text", pa.string()),
        ("vector", pa.list_(pa.float32(), vectors.shape[1])),
    ])  # fmt: skip
    rng = random.Random(seed)
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(begin, count, PARQUET_ROWS):
            files, texts = [], []
            out = np.zeros((min(count, start + PARQUET_ROWS) - start, vectors.shape[1]), np.float32)
            for position in range(start, start + len(out)):
                n, i = divmod(position, len(rows))
                row = rows[i]
                if n == 0:
                    text, vector = row["text"], vectors[i]
                else:
                    other = rows[rng.randrange(len(rows))]["text"]
                    text, vector = noisy(row, other, vectors[i], rng)
                name = row["file_name"] if per_file == 1 else f"part{i // per_file:06d}"
                files.append(f"copy{n}/{name}")
                texts.append(text)
                out[position - start] = vector
            flat = pa.FixedSizeListArray.from_arrays(pa.array(out.reshape(-1)), vectors.shape[1])
            writer.write_table(pa.table({"file": files, "text": texts, "vector": flat}, schema))


def build(args: argparse.Namespace) -> list[str]:
    rows, vectors, queries = source_rows(args.source)
    data = args.work / "data"
    if not (data / "lancedb").exists():
        parquet = args.work / "chunks.parquet"
        if not parquet.exists():
            write_parquet(parquet, rows, vectors, args.rows, args.chunks_per_file)
        from citewell import Citewell, Settings
        from citewell.auth.access import Access
        from citewell.engine.scoped import Scoped
        from citewell.services.ingest import IngestService

        app = Citewell.from_settings(Settings.load(data_dir=data))
        report = IngestService(Scoped(app, Access.everything())).import_chunks(parquet, KB)
        print(f"imported {report.chunks_stored:,} chunks in {report.seconds:.0f} s", flush=True)
        app.store.wait_for_training(None)
        app.close()
    return queries


def process_tree(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = [int(k) for k in children.read_text().split()] if children.exists() else []
    return [pid, *(p for kid in kids for p in process_tree(kid))]


def mapped_files_mb(pid: int, top: int = 12) -> dict[str, int]:
    """The tree's PSS in each mapped file (by name: a copy's files are the same names in
    every version), the ``top`` largest."""
    found: dict[str, int] = {}
    for process in process_tree(pid):
        name = ""
        for line in Path(f"/proc/{process}/smaps").read_text().splitlines():
            head = line.split(maxsplit=5)
            if len(head) == 6 and "-" in head[0]:  # a mapping's first line, with a path
                name = Path(head[5]).name
            elif len(head) == 5 and "-" in head[0]:
                name = ""
            elif line.startswith("Pss:") and name:
                found[name] = found.get(name, 0) + int(line.split()[1])
    largest = sorted(found.items(), key=lambda item: -item[1])[:top]
    return {name: kb >> 10 for name, kb in largest}


def memory_mb(pid: int) -> dict[str, Any]:
    """PSS and RSS of the tree, summed (PSS also split into anonymous memory and mapped
    files), and each process's private, shared and anonymous megabytes."""
    totals, each = dict.fromkeys(("Pss", "Rss", "Pss_Anon", "Pss_File"), 0), []
    for process in process_tree(pid):
        fields: dict[str, int] = {}
        for line in Path(f"/proc/{process}/smaps_rollup").read_text().splitlines():
            key, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                fields[key] = int(value.split()[0])
        for key in totals:
            totals[key] += fields.get(key, 0)
        private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
        shared = fields.get("Shared_Clean", 0) + fields.get("Shared_Dirty", 0)
        each.append({"pid": process, "private_mb": private >> 10, "shared_mb": shared >> 10,
                     "anonymous_mb": fields.get("Anonymous", 0) >> 10})  # fmt: skip
    return {"pss_mb": round(totals["Pss"] / 1024), "rss_mb": round(totals["Rss"] / 1024),
            "pss_anonymous_mb": round(totals["Pss_Anon"] / 1024),
            "pss_files_mb": round(totals["Pss_File"] / 1024), "processes": each}  # fmt: skip


def copies_ready(client: httpx.Client, workers: int, limit: float) -> dict[str, int]:
    """Ask until ``4 x workers`` answers in a row say every copy is current (or too big)."""
    deadline, streak, states = time.monotonic() + limit, 0, {}
    while time.monotonic() < deadline and streak < 4 * workers:
        copy = client.get("/api/v1/stats/store").json()["table_copy"]
        state = "current" if copy["current"] else copy["state"]
        states[state] = states.get(state, 0) + 1
        streak = streak + 1 if state in ("current", "too_big") else 0
        time.sleep(0.05 if streak else 2.0)
    return states


@contextlib.contextmanager
def searching_everywhere(queries: list[str], workers: int, least: float = 60.0) -> Iterator[None]:
    """Searches from ``2 x workers`` clients at once, each on its own connection, so that
    every worker gets some and makes or maps its copy (a worker's copy is made on its
    first search; one kept-alive connection stays with one worker). At least ``least``
    seconds, and until the block ends."""
    stop, began = threading.Event(), time.monotonic()

    def search(offset: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{PORT}", timeout=120) as client:
            n = offset
            while not stop.is_set():
                body = {"collection_names": [KB], "query": queries[n % len(queries)], "k": 8}
                client.post("/api/v1/retrieval/query/collection", json=body)
                n += 2 * workers
                stop.wait(2.0)  # light: a copy is made at the lowest priority

    threads = [threading.Thread(target=search, args=(i,)) for i in range(2 * workers)]
    for thread in threads:
        thread.start()
    try:
        yield
        time.sleep(max(0.0, least - (time.monotonic() - began)))
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def measure(args: argparse.Namespace, shared: bool, queries: list[str]) -> dict[str, Any]:
    env = {"CITEWELL_TABLE_COPY_SHARED": str(shared).lower()}
    options = ("--workers", str(args.workers))
    server = start_server(args.work / "data", PORT, env, options, args.work / "server.log")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{PORT}", timeout=120) as client:
            began = time.monotonic()
            with searching_everywhere(queries, args.workers):
                states = copies_ready(client, args.workers, args.wait)
            ready = time.monotonic() - began
            spent = []
            for n, query in enumerate(queries[: args.queries + 20]):
                body = {"collection_names": [KB], "query": query, "k": 8}
                start = time.perf_counter()
                client.post("/api/v1/retrieval/query/collection", json=body).raise_for_status()
                if n >= 20:
                    spent.append((time.perf_counter() - start) * 1000)
            copy = client.get("/api/v1/stats/store").json()["table_copy"]
        memory = memory_mb(server.pid)
    finally:
        kill(server)
    spent.sort()
    return {
        "shared": shared, "workers": args.workers, "copy_states_seen": states,
        "copies_ready_s": round(ready), "copy": copy, **memory,
        "p50_ms": round(statistics.median(spent), 1),
        "p95_ms": round(spent[int(0.95 * (len(spent) - 1))], 1),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path("/tmp/scifact"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/shared"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--wait", type=float, default=900.0, help="seconds to wait for copies")
    parser.add_argument("--only", choices=("shared", "own"), default=None)
    parser.add_argument(
        "--chunks-per-file", type=int, default=1, help="1: each copy of a SciFact file its own"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    queries = build(args)
    results = [
        measure(args, shared, queries)
        for shared in (True, False)
        if args.only is None or args.only == ("shared" if shared else "own")
    ]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
