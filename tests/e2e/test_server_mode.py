"""Server mode as a team deploys it: two `citewell serve` processes (no job worker) and two
`citewell worker` processes on one PostgreSQL, either sharing one data dir (a shared mount)
or each with its own and the stored files in an S3 bucket (moto's server: a wire-faithful
fake of S3, which cannot run here). 300 files go in through both APIs, one worker is killed
with SIGKILL mid-batch, and still every file is indexed exactly once, each API serves the
originals the other took in, `citewell check` is clean, and a user's rate limit holds
across both APIs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from sqlalchemy import Connection, text

from citewell.auth import AuthStore
from citewell.db.engine import url_engine
from citewell.testing.processes import free_port
from citewell.testing.served import documents, kill, start_server, start_worker
from tests.connector_helpers import S3_KEYS, moto_s3

pytestmark = pytest.mark.e2e
# LIMIT a minute: low, so that what refills while the requests run stays small beside it
# even when each takes long (at 200, 400 requests on a loaded CI machine took a minute and
# the refill let every one pass). The admin's own 36 requests stay within it too.
FILES, LIMIT = 300, 60


def _upload(bases: list[str], headers: dict[str, str]) -> list[str]:
    docs, batches = documents(FILES), []
    with httpx.Client(base_url=bases[0], headers=headers, timeout=120) as client:
        assert client.post("/api/v1/knowledge", json={"name": "team"}).status_code == 201
    for n, start in enumerate(range(0, FILES, 30)):  # alternating between the two APIs
        with httpx.Client(base_url=bases[n % 2], headers=headers, timeout=120) as client:
            files = [("files", doc) for doc in docs[start : start + 30]]
            reply = client.post("/api/v1/knowledge/team/batch", files=files)
            assert reply.status_code == 202, reply.text
            batches.append(reply.json()["batch_id"])
    return batches


def _states(url: str) -> dict[str, int]:
    """Jobs per state, read from the database (polling the API would spend the key's budget)."""
    engine = url_engine(url)
    try:
        with engine.connect() as db:
            return dict(db.execute(text("SELECT state, count(*) FROM jobs GROUP BY state")).all())
    finally:
        engine.dispose()


def _held_by(db: Connection, pid: int) -> int:
    """Running jobs the process ``pid`` of this host holds."""
    held = db.execute(
        text(
            "SELECT count(*) FROM jobs WHERE state IN ('parsing', 'chunking', "
            "'embedding') AND split_part(holder, '/', 2) = :pid"
        ),
        {"pid": str(pid)},
    )
    return int(held.scalar_one())


def _stop_one_holding(
    url: str, workers: list[subprocess.Popen[bytes]], deadline: float
) -> subprocess.Popen[bytes]:
    """Stop (SIGSTOP) whichever worker is first seen holding running jobs once 40 files are
    indexed, and return it. Seen holding, a worker could still finish its batch before a
    SIGKILL landed (a batch of one-chunk files takes a tenth of a second), and then nothing
    was left to take over. Either worker will do: waiting for one chosen worker failed when
    the other happened to claim every batch after the 40th file."""
    engine = url_engine(url)
    try:
        with engine.connect() as db:
            while True:
                assert time.monotonic() < deadline, "no worker was seen holding a batch"
                db.commit()  # a fresh snapshot each round
                indexed = db.execute(
                    text("SELECT count(*) FROM jobs WHERE state = 'indexed'")
                ).scalar_one()
                for worker in workers if indexed >= 40 else []:
                    if _held_by(db, worker.pid):
                        os.killpg(worker.pid, signal.SIGSTOP)
                        db.commit()
                        if _held_by(db, worker.pid):
                            return worker  # stopped while holding: it cannot finish them
                        os.killpg(worker.pid, signal.SIGCONT)
                time.sleep(0.05)
    finally:
        engine.dispose()


@pytest.fixture(params=["shared data dir", "bucket"])
def file_store(request, tmp_path):
    """(the data dir of each process by its name, the settings that say where files live)."""
    if request.param == "shared data dir":
        yield (lambda name: tmp_path / "data"), {}
        return
    with moto_s3("citewell") as (endpoint, _client):
        settings = {
            "CITEWELL_FILE_STORE": "s3",
            "S3_BUCKET_NAME": "citewell",  # Open WebUI's names work as well
            "CITEWELL_FILE_STORE_PREFIX": "team",
            "CITEWELL_FILE_STORE_ENDPOINT": endpoint,
            "CITEWELL_FILE_STORE_REGION": "us-east-1",
            "CITEWELL_FILE_STORE_ACCESS_KEY_ID": S3_KEYS["access_key_id"],
            "CITEWELL_FILE_STORE_SECRET_ACCESS_KEY": S3_KEYS["secret_access_key"],
        }
        yield (lambda name: tmp_path / name), settings


def _originals_served_by_each(bases: list[str], headers: dict[str, str]) -> None:
    """Each API serves text and originals, whichever API took them in and worker stored them."""
    listed = httpx.get(f"{bases[0]}/api/v1/files", headers=headers, timeout=30).json()
    for record in listed[:3] + listed[-3:]:
        for base in bases:
            content = httpx.get(
                f"{base}/api/v1/files/{record['id']}/content", headers=headers, timeout=30
            )
            assert content.status_code == 200 and content.content, content.text
            text = httpx.get(f"{base}/api/v1/files/{record['id']}/text", headers=headers)
            assert text.status_code == 200 and text.json()["text"]


def test_two_apis_and_two_workers_survive_a_killed_worker(postgres, file_store):
    # As an operator starts it: an empty database, no pgvector yet (the server creates it).
    url, (data, where) = postgres.create_database(vector=False), file_store
    users = AuthStore(url_engine(url))
    root, spender = users.create_user("root", role="admin"), users.create_user("spender")
    # The rate limit counts per user: the budget spent below is the spender's alone.
    work, budget = users.create_key(root.id, "work")[1], users.create_key(spender.id, "b")[1]
    env = {
        "CITEWELL_DATABASE_URL": url,
        "CITEWELL_AUTH": "required",
        "CITEWELL_SERVE_JOB_WORKER": "false",
        "CITEWELL_RATE_LIMIT_PER_MINUTE": str(LIMIT),
        "CITEWELL_JOB_BATCH_FILES": "16",
        **where,
    }
    ports = [free_port(), free_port()]
    started: list[subprocess.Popen[bytes]] = []
    try:
        started += [start_server(data(f"api{n}"), port, env) for n, port in enumerate(ports)]
        workers = [start_worker(data("worker0"), env), start_worker(data("worker1"), env)]
        started += workers
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        headers = {"Authorization": f"Bearer {work}"}
        batches = _upload(bases, headers)
        deadline = time.monotonic() + 300
        assert len(batches) == FILES // 30
        # SIGKILL mid-batch: its claimed jobs must not be lost
        kill(_stop_one_holding(url, workers, deadline))
        while _states(url) != {"indexed": FILES}:
            assert time.monotonic() < deadline, "the batches did not finish"
            time.sleep(0.5)
        _originals_served_by_each(bases, headers)
        began = time.monotonic()
        codes = [
            httpx.get(
                f"{bases[n % 2]}/api/v1/knowledge", headers={"Authorization": f"Bearer {budget}"}
            ).status_code
            for n in range(2 * LIMIT)  # each API alone would allow all of them
        ]
        refilled = (time.monotonic() - began) * LIMIT / 60
    finally:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in started:
            process.wait(timeout=90)
    # Every file once, each with its one chunk, every job indexed.
    engine = url_engine(url)
    with engine.connect() as db:
        links = db.execute(
            text("SELECT count(*), count(DISTINCT path) FROM knowledge_base_files")
        ).one()
        files = db.execute(text("SELECT count(*), sum(chunk_count) FROM files")).one()
        # The killed worker's jobs were taken over, each then run alone (jobs/lost.py).
        retried = db.execute(text("SELECT count(*) FROM jobs WHERE run_alone")).scalar_one()
    assert tuple(links) == (FILES, FILES) and tuple(files) == (FILES, FILES)
    assert retried > 0
    check = subprocess.run(
        [sys.executable, "-m", "citewell", "--data-dir", str(data("check")), "check", "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(check.stdout)
    assert check.returncode == 0 and report["problems"] == 0, check.stdout + check.stderr
    # One budget across both APIs: LIMIT requests pass, plus what refilled meanwhile.
    allowed = codes.count(200)
    assert LIMIT <= allowed <= LIMIT + refilled + 1
    assert codes.count(429) == len(codes) - allowed
    assert {n % 2 for n, code in enumerate(codes) if code == 429} == {0, 1}  # both refuse
