"""The crash-recovery scenario: queue files through the API, SIGKILL the server at random
points of its progress while it ingests them, restart it each time, then check that every
file was indexed exactly once. Run small by the end-to-end tests, big by
``benchmarks.sigkill_ingest``.

Each kill takes the server's whole process group (the server and its extraction worker), as
a crash or the OOM killer would. After the last restart the queue is run to the end; then:
every job is indexed, the KB holds each file once, no chunk id appears twice, every file has
the chunks its record says, and ``citewell check`` finds nothing."""

from __future__ import annotations

import random
import signal
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import httpx

from citewell.testing.processes import free_port
from citewell.testing.served import documents, kill, start_server

KB = "crash-test"
UPLOAD_BATCH = 250


def upload(base: str, docs: list[tuple[str, bytes]]) -> list[str]:
    batches = []
    with httpx.Client(base_url=base, timeout=300) as client:
        client.post("/api/v1/knowledge", json={"name": KB})
        for start in range(0, len(docs), UPLOAD_BATCH):
            files = [("files", doc) for doc in docs[start : start + UPLOAD_BATCH]]
            response = client.post(f"/api/v1/knowledge/{KB}/batch", files=files)
            response.raise_for_status()
            batches.append(response.json()["batch_id"])
    return batches


def progress(base: str, batches: list[str]) -> tuple[int, bool]:
    """How many of the batches' jobs are indexed, and whether every batch is done."""
    with httpx.Client(base_url=base, timeout=60) as client:
        states = [client.get(f"/api/v1/jobs/batches/{b}").json() for b in batches]
    return sum(s["counts"].get("indexed", 0) for s in states), all(s["done"] for s in states)


def finished(base: str, batches: list[str]) -> bool:
    return progress(base, batches)[1]


def reach(base: str, batches: list[str], mark: int) -> bool:
    """Wait until ``mark`` jobs are indexed; False when the batches finished first."""
    while True:
        indexed, done = progress(base, batches)
        if done:
            return False
        if indexed >= mark:
            return True
        time.sleep(0.2)  # each look lists every job: not so often that it slows the server


def kill_marks(rng: random.Random, files: int, kills: int) -> list[int]:
    """The indexed counts to kill at, spread over the first four fifths of the run. Kills are
    tied to progress, not to the clock, so a faster pipeline still gets interrupted."""
    return sorted(rng.randint(1, max(1, files * 4 // 5)) for _ in range(kills))


def verify(data: Path, count: int) -> dict[str, object]:
    from citewell.app import Citewell
    from citewell.config import Settings
    from citewell.types import ChunkFilter

    app = Citewell.from_settings(Settings.load(data_dir=data, extract_isolated=False))
    try:
        states = [job.state for job in app.jobs.find()]
        files = app.files(KB)
        table = cast(Any, app.store)._table  # every row's id, duplicates included (LanceDB)
        ids = table.search().select(["id"]).limit(None).to_arrow()["id"].to_pylist()
        short = [
            f.name for f in files if app.store.count(ChunkFilter(file_ids=(f.id,))) != f.chunk_count
        ]
        report = app.check()
        return {
            "jobs_indexed": states.count("indexed"),
            "jobs_other": len(states) - states.count("indexed"),
            "files_in_kb": len(files),
            "distinct_names": len({f.name for f in files}),
            "chunks": len(ids),
            "duplicate_chunk_ids": len(ids) - len(set(ids)),
            "files_with_wrong_chunk_count": len(short),
            "check_problems": report.problems,
            "ok": states.count("indexed") == len(states) == count
            and len(files) == count
            and len(ids) == len(set(ids))
            and not short
            and report.problems == 0,
        }
    finally:
        app.close()


def run(files: int, kills: int, seed: int, data: Path | None = None) -> dict[str, object]:
    rng = random.Random(seed)
    data = data or Path(tempfile.mkdtemp(prefix="citewell-crash-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    began = time.monotonic()
    server = start_server(data, port)
    try:
        batches = upload(base, documents(files))
        done_kills = 0
        for mark in kill_marks(rng, files, kills):
            if not reach(base, batches, mark):
                break  # nothing left to interrupt
            kill(server)
            done_kills += 1
            server = start_server(data, port)
        while not finished(base, batches):
            time.sleep(0.5)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    summary = {"files": files, "kills": done_kills, "seconds": round(time.monotonic() - began, 1)}
    return {**summary, **verify(data, files)}
