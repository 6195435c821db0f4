"""More API machines on one corpus, as a team adds them: two `citewell serve` processes with
data dirs of their own (as if on two hosts) and a `citewell worker`, on a PostgreSQL primary
with a streaming replica (real replication, started here with pg_basebackup) that the
machines read their copies of the big chunk table from; stored files in an S3 bucket (moto's
server: a wire-faithful fake of S3, which cannot run here).

Each machine is ready once it has its copy; an upload through one is found through the
other moments after it is indexed, from the copy and the changes since; a machine killed
with SIGKILL and started again serves the same results as the other at once (the copy it
saved, and the changes since); with the replica stopped, uploads are still found through
both (read from the primary), and nothing is lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from citewell.db.engine import url_engine
from citewell.testing.processes import free_port
from citewell.testing.served import documents, kill, start_server, start_worker
from tests.connector_helpers import S3_KEYS, moto_s3

pytestmark = pytest.mark.e2e
KB = "team"
QUERIES = ("Measurement 3 station", "ferry to Skye", "lighthouse keeper")


def _indexed(url: str) -> int:
    engine = url_engine(url)
    try:
        with engine.connect() as db:
            found = db.execute(text("SELECT count(*) FROM jobs WHERE state = 'indexed'"))
            return int(found.scalar_one())
    finally:
        engine.dispose()


def _upload(base: str, url: str, name: str, content: bytes) -> None:
    """Queued through ``base``, indexed by the worker."""
    done = _indexed(url)
    with httpx.Client(base_url=base, timeout=60) as client:
        files = {"file": (name, content)}
        reply = client.post(f"/api/v1/knowledge/{KB}/files?wait=false", files=files)
        assert reply.status_code == 202, reply.text
    deadline = time.monotonic() + 120
    while _indexed(url) <= done:
        assert time.monotonic() < deadline, f"{name} was not indexed"
        time.sleep(0.1)


def _search(base: str, query: str) -> list[str]:
    body = {"collection_names": [KB], "query": query, "k": 4}
    reply = httpx.post(f"{base}/api/v1/retrieval/query/collection", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["documents"][0]


def _found_through(base: str, query: str, words: str, limit: float = 10.0) -> float:
    """Seconds until a search through ``base`` finds a text holding ``words``."""
    began = time.monotonic()
    while not any(words in found for found in _search(base, query)):
        assert time.monotonic() - began < limit, f"{words!r} not found through {base}"
        time.sleep(0.05)
    return time.monotonic() - began


def _ready(base: str, limit: float = 120.0) -> dict[str, Any]:
    """/readyz once it says ready (a machine is not while it makes its first copy)."""
    deadline = time.monotonic() + limit
    while (reply := httpx.get(f"{base}/readyz", timeout=30)).status_code != 200:
        assert time.monotonic() < deadline, reply.text
        time.sleep(0.2)
    return reply.json()


def _copy(base: str) -> dict[str, Any]:
    stats = httpx.get(f"{base}/api/v1/stats/store", timeout=30).json()
    return stats["table_copy"]


def test_two_api_machines_read_their_copies_from_a_replica(postgres, tmp_path):
    replica = postgres.replica()
    url = postgres.create_database()
    read_url = replica.wait_for_database(url.rsplit("/", 1)[1])
    started: list[subprocess.Popen[bytes]] = []
    with moto_s3("citewell") as (endpoint, _client):
        env = {
            "CITEWELL_DATABASE_URL": url,
            "CITEWELL_DATABASE_READ_URL": read_url,
            "CITEWELL_SERVE_JOB_WORKER": "false",
            "CITEWELL_VECTOR_INDEX_MIN_ROWS": "8",  # the corpus below is a "big" table
            "CITEWELL_FILE_STORE": "s3",
            "CITEWELL_FILE_STORE_BUCKET": "citewell",
            "CITEWELL_FILE_STORE_ENDPOINT": endpoint,
            "CITEWELL_FILE_STORE_REGION": "us-east-1",
            "CITEWELL_FILE_STORE_ACCESS_KEY_ID": S3_KEYS["access_key_id"],
            "CITEWELL_FILE_STORE_SECRET_ACCESS_KEY": S3_KEYS["secret_access_key"],
        }
        ports = [free_port(), free_port()]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        try:
            machines = [
                start_server(tmp_path / f"machine{n}", port, env) for n, port in enumerate(ports)
            ]
            started += [*machines, start_worker(tmp_path / "worker", env)]
            with httpx.Client(base_url=bases[0], timeout=60) as client:
                assert client.post("/api/v1/knowledge", json={"name": KB}).status_code == 201
            for n, (name, content) in enumerate(documents(12)):
                _upload(bases[n % 2], url, name, content)
            for base in bases:  # each makes its copy from the replica, then is ready
                assert _ready(base)["status"] == "ready"
                assert _copy(base)["current"]
            _check_uploads_cross_machines(bases, url)
            machines[0] = _killed_and_started_again(machines[0], tmp_path, ports[0], env)
            started[0] = machines[0]
            for query in QUERIES:  # the same answers through both
                assert set(_search(bases[0], query)) == set(_search(bases[1], query))
            assert "replica (database_read_url): answering" in _check(tmp_path, env)
            replica.stop()  # reads go to the primary; nothing is lost
            assert "replica (database_read_url): does not answer" in _check(tmp_path, env)
            _upload(bases[1], url, "gulls.md", b"# Gulls\n\nGulls nest on the lighthouse roof.")
            for base in bases:
                _found_through(base, "gulls nest", "Gulls nest")
        finally:
            for process in started:
                if process.poll() is None:
                    kill(process)
            replica.stop()


def _check(tmp_path: Path, env: dict[str, str]) -> str:
    """What `citewell check` prints (run as the operator would, beside the machines)."""
    done = subprocess.run(
        [sys.executable, "-m", "citewell", "--data-dir", str(tmp_path / "check"), "check",
         "--recall-samples", "0"],
        env={**os.environ, **env}, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    return done.stdout + done.stderr


def _check_uploads_cross_machines(bases: list[str], url: str) -> None:
    """Through one machine in, through the other out: from its copy and the changes."""
    text = b"# Ferries\n\nThe ferry to Skye leaves at dawn from the northern quay."
    _upload(bases[0], url, "ferries.md", text)
    _found_through(bases[1], "ferry to Skye", "ferry to Skye")
    copy = _copy(bases[1])
    assert copy["current"] and copy["changed_rows"] >= 1  # not made again
    more = b"# Lights\n\nThe lighthouse keeper lights the lamp at dusk."
    _upload(bases[1], url, "lights.md", more)
    _found_through(bases[0], "lighthouse keeper", "lighthouse keeper")


def _killed_and_started_again(
    machine: subprocess.Popen[bytes], tmp_path: Path, port: int, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    kill(machine)  # SIGKILL
    again = start_server(tmp_path / "machine0", port, env)
    base = f"http://127.0.0.1:{port}"
    _ready(base)
    copy = _copy(base)
    # the copy it saved, with the two uploads since: a copy made anew would hold them
    assert copy["current"] and copy["changed_rows"] >= 2
    return again
