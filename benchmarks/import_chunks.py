"""How fast ``citewell import`` loads chunks that come with their vectors.

Rows are made from SciFact's abstracts (each abstract's sentences as chunks, repeated with a
copy number until ``--chunks`` rows), ten chunks a file, with random unit vectors of the
embedding model's dimension (an import checks their length, not their meaning). They are
written to a Parquet and a JSON Lines file, then each is imported into a fresh data dir
through the service the CLI uses, and chunks per second reported (the whole import: read,
BM25 terms, chunk store writes and its optimize, stored texts, catalog).

    .venv/bin/python -m benchmarks.import_chunks --chunks 200000 --work /tmp/import
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import scifact_docs
from citewell import Citewell, Settings
from citewell.auth.access import Access
from citewell.engine.scoped import Scoped
from citewell.services.ingest import IngestService
from citewell.types import ChunkFilter

SENTENCE = re.compile(r"(?<=[.!?])\s+")
PER_FILE = 10


def rows(count: int, dimension: int, seed: int = 5) -> dict[str, list[Any]]:
    sentences = [s for _, text in scifact_docs() for s in SENTENCE.split(text) if len(s) > 40]
    rng = np.random.default_rng(seed)
    files, texts = [], []
    for i in range(count):
        files.append(f"copy{i // len(sentences)}/doc{i // PER_FILE:07d}.txt")
        texts.append(f"{sentences[i % len(sentences)]} ({i})")
    vectors = rng.standard_normal((count, dimension), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return {"file": files, "text": texts, "vector": list(vectors)}


def write_files(work: Path, made: dict[str, list[Any]]) -> tuple[Path, Path]:
    parquet, jsonl = work / "chunks.parquet", work / "chunks.jsonl"
    dimension = len(made["vector"][0])
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.concatenate(made["vector"])), dimension)
    table = pa.table({"file": made["file"], "text": made["text"], "vector": vectors})
    pq.write_table(table, parquet)
    with jsonl.open("w") as out:
        for file, text, vector in zip(made["file"], made["text"], made["vector"], strict=True):
            out.write(json.dumps({"file": file, "text": text, "vector": vector.tolist()}) + "\n")
    return parquet, jsonl


def imported(work: Path, path: Path) -> dict[str, Any]:
    data_dir = work / f"dir-{path.suffix[1:]}"
    shutil.rmtree(data_dir, ignore_errors=True)
    app = Citewell.from_settings(Settings.load(data_dir=data_dir))
    try:
        service = IngestService(Scoped(app, Access.everything()))
        began = time.perf_counter()
        report = service.import_chunks(path, "bench")
        seconds = time.perf_counter() - began
        total = app.store.count(ChunkFilter())
    finally:
        app.close()
    return {"format": path.suffix[1:], "chunks": report.chunks_stored, "files":
            report.files_imported, "seconds": round(seconds, 2), "chunks_per_second":
            round(report.chunks_stored / seconds), "store_rows": total}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--work", type=Path, default=Path("/tmp/import"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    parquet, jsonl = write_files(args.work, rows(args.chunks, args.dimension))
    results = [imported(args.work, parquet), imported(args.work, jsonl)]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
