"""How fast ``citewell import`` loads chunks that come with their vectors.

Rows are made from SciFact's abstracts (each abstract's sentences as chunks, repeated with a
copy number until ``--chunks`` rows), ten chunks a file, with random unit vectors of the
embedding model's dimension (an import checks their length, not their meaning). They are
written to a Parquet and a JSON Lines file, then each is imported into a new data dir
(left in place) through the service the CLI uses, and chunks per second reported (the
whole import: read, BM25 terms, chunk store writes and its optimize, stored texts,
catalog), and over the last quarter of the rows alone (how the rate holds as the table
grows), and how long the import took after its last batch (``closing_seconds``: the
closing optimize).

    .venv/bin/python -m benchmarks.import_chunks --chunks 200000 --work /tmp/import

``--formats parquet`` imports the Parquet file alone; the files are written once per
``--work`` and ``--chunks``, so two trees can import the same file in turn (run with
``PYTHONPATH=<other tree>/src`` for the other one). ``--then N`` imports N chunks of other
texts into another KB of the same data dir afterwards, as a process that did not see the
table empty (a second import into a big table: ``then_*`` in the report).
``--thread-cpu`` prints what each thread and child process spent in the rows and in the
closing step (``benchmarks.lab.thread_cpu``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import scifact_docs
from benchmarks.lab.thread_cpu import ThreadCpu

SENTENCE = re.compile(r"(?<=[.!?])\s+")
PER_FILE = 10
BLOCK = 1_000_000  # rows made and written at a time


def blocks(
    count: int, dimension: int, per_file: int = PER_FILE, seed: int = 5, marker: str = ""
) -> Iterator[pa.Table]:
    """The rows, ``BLOCK`` at a time (ten million at once would not fit in 24 GB); with a
    ``marker``, in its own folder and with texts of their own (not the files held already)."""
    sentences = [s for _, text in scifact_docs() for s in SENTENCE.split(text) if len(s) > 40]
    rng = np.random.default_rng(seed)  # one stream over the blocks: the rows of one call
    for start in range(0, count, BLOCK):
        numbers = range(start, min(count, start + BLOCK))
        folder = f"{marker}/" if marker else ""
        files = [f"{folder}copy{i // len(sentences)}/doc{i // per_file:07d}.txt" for i in numbers]
        texts = [f"{sentences[i % len(sentences)]} ({marker}{i})" for i in numbers]
        vectors = rng.standard_normal((len(numbers), dimension), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        flat = pa.array(vectors.reshape(-1))
        yield pa.table(
            {
                "file": files,
                "text": texts,
                "vector": pa.FixedSizeListArray.from_arrays(flat, dimension),
            }
        )


def write_files(
    work: Path,
    count: int,
    dimension: int,
    formats: list[str],
    per_file: int = PER_FILE,
    marker: str = "",
) -> dict[str, Path]:
    """The rows as a file of each format asked for (kept: made once per size)."""
    name = f"chunks-{count}" if per_file == PER_FILE else f"chunks-{count}-{per_file}"
    name += f"-{marker}" if marker else ""
    paths = {f: work / f"{name}.{f}" for f in formats}
    if all(p.exists() for p in paths.values()):
        return paths
    schema = pa.schema(
        {"file": pa.string(), "text": pa.string(), "vector": pa.list_(pa.float32(), dimension)}
    )
    with ExitStack() as files:
        parquet = pq.ParquetWriter(paths["parquet"], schema) if "parquet" in paths else None
        if parquet is not None:
            files.enter_context(parquet)
        jsonl = files.enter_context(paths["jsonl"].open("w")) if "jsonl" in paths else None
        for block in blocks(count, dimension, per_file, marker=marker):
            if parquet is not None:
                parquet.write_table(block)
            if jsonl is not None:
                for row in block.to_pylist():
                    jsonl.write(json.dumps(row) + "\n")
    return paths


def imported(
    work: Path,
    path: Path,
    kb: str = "bench",
    data_dir: Path | None = None,
    thread_cpu: bool = False,
) -> dict[str, Any]:
    """One import into a data dir of its own, left in place (remove the ``dir-*`` of
    ``--work`` when done): files removed just before an import made it up to twice as slow
    here (ext4 without a journal looks past each inode freed in the last minute for every
    file it creates; journal, "Fragments an import need not compact")."""
    # Imported here, not at the top: the import's helper processes load this module again
    # (multiprocessing's spawn), and the CLI's load only its light entry point.
    from citewell import Citewell, Settings
    from citewell.auth.access import Access
    from citewell.engine.scoped import Scoped
    from citewell.services.ingest import IngestService
    from citewell.types import ChunkFilter

    data_dir = data_dir or work / f"dir-{path.suffix[1:]}-{os.getpid()}"
    app = Citewell.from_settings(Settings.load(data_dir=data_dir))
    marks: list[tuple[float, int]] = []
    try:
        service = IngestService(Scoped(app, Access.everything()))
        with ThreadCpu() if thread_cpu else nullcontext() as cpu:
            began = time.perf_counter()
            report = service.import_chunks(
                path, kb, lambda r: marks.append((time.perf_counter(), r.chunks_stored))
            )
            seconds = time.perf_counter() - began
        total = app.store.count(ChunkFilter())
    finally:
        app.close()
    if cpu is not None and marks:  # the rows, then the closing step
        phases = {"rows": (began, marks[-1][0]), "closing": (marks[-1][0], began + seconds)}
        print(json.dumps({f"cpu_{k}": cpu.between(*v) for k, v in phases.items()}, indent=2))
    return {"format": path.suffix[1:], "chunks": report.chunks_stored, "files":
            report.files_imported, "seconds": round(seconds, 2), "chunks_per_second":
            round(report.chunks_stored / seconds), "last_quarter_per_second":
            last_quarter_rate(marks), "closing_seconds": closing_seconds(began, seconds, marks),
            "store_rows": total, "data_dir": str(data_dir)}  # fmt: skip


def then_imported(args: argparse.Namespace, first: dict[str, Any]) -> dict[str, Any]:
    """``--then`` chunks of texts of their own into another KB of ``first``'s data dir, by
    a new app (whose store did not see the table empty)."""
    fmt = first["format"]
    paths = write_files(args.work, args.then, args.dimension, [fmt], args.per_file, "then")
    then = imported(args.work, paths[fmt], kb="bench-then", data_dir=Path(first["data_dir"]))
    keys = ("chunks", "seconds", "chunks_per_second", "closing_seconds")
    return {f"then_{key}": then[key] for key in keys}


def last_quarter_rate(marks: list[tuple[float, int]]) -> int:
    """Rows a second over the batches written in the last quarter of the rows (before
    the closing optimize)."""
    if len(marks) < 2:
        return 0
    end_time, end_rows = marks[-1]
    start_time, start_rows = next(m for m in marks if m[1] >= 0.75 * end_rows)
    if start_rows == end_rows:
        start_time, start_rows = marks[-2]
    return round((end_rows - start_rows) / (end_time - start_time))


def closing_seconds(began: float, seconds: float, marks: list[tuple[float, int]]) -> float:
    """What the import took after its last batch was written: the closing optimize (the
    indexes take the new rows in; the first vector index is trained)."""
    return round(began + seconds - marks[-1][0], 2) if marks else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--work", type=Path, default=Path("/tmp/import"))
    parser.add_argument("--formats", default="parquet,jsonl", help="Which files to import.")
    parser.add_argument("--per-file", type=int, default=PER_FILE, help="chunks a file")
    parser.add_argument("--then", type=int, default=0, help="chunks imported again after")
    parser.add_argument(
        "--thread-cpu",
        action="store_true",
        help="print each thread's and child process's CPU seconds in the rows and the closing "
        "step (benchmarks.lab.thread_cpu)",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    formats = args.formats.split(",")
    paths = write_files(args.work, args.chunks, args.dimension, formats, args.per_file)
    results = [imported(args.work, paths[f], thread_cpu=args.thread_cpu) for f in formats]
    if args.then:
        for result in results:
            result.update(then_imported(args, result))
    print(json.dumps(results, indent=2), flush=True)  # before exit: a hang there loses nothing


if __name__ == "__main__":
    main()
