"""``citewell import`` of a Parquet file of chunks into a fresh server-mode database: the
import's seconds, then the HNSW index built after it (dropped for the load, as
``benchmarks.server_copy`` loads its million).

Each run makes a new database on the cluster in ``--pg-root`` (kept for later runs) and a
new data dir under ``--work``. ``--rows`` takes the file's first rows (a copy of them is
written beside it once). To compare trees, run it with ``PYTHONPATH=<tree>/src:.`` in turns.

    python -m benchmarks.lab.postgres_import --parquet /tmp/servercopy/chunks.parquet \
        --rows 100000 --pg-root /tmp/pgimport --work /tmp/pgimport-data
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from benchmarks.postgres_million import server
from benchmarks.server_copy import import_rows


def first_rows(parquet: Path, rows: int) -> Path:
    """The file's first ``rows`` rows in a file of their own (written once)."""
    part = parquet.with_name(f"{parquet.stem}-{rows}.parquet")
    if not part.exists():
        pq.write_table(pq.read_table(parquet).slice(0, rows), part)
    return part


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parquet", type=Path, default=Path("/tmp/servercopy/chunks.parquet"))
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--pg-root", type=Path, default=Path("/tmp/pgimport"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/pgimport-data"))
    parser.add_argument("--no-index", action="store_true", help="Time the import alone.")
    args = parser.parse_args()
    source = first_rows(args.parquet, args.rows)
    pg = server(args.pg_root, "1GB")
    try:
        shutil.rmtree(args.work, ignore_errors=True)
        print(json.dumps(import_rows(args.work, source, pg.create_database(), not args.no_index)))
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
