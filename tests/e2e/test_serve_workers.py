"""`citewell serve --workers 2` on the embedded store: two API processes on one port, one
elected job worker, rate limits counted across both, a clean stop on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from citewell.auth import AuthStore
from citewell.config import Settings
from citewell.db import open_engine
from citewell.testing.processes import free_port
from citewell.testing.served import documents, start_server

pytestmark = pytest.mark.e2e


def _keys(data: Path) -> tuple[str, str]:
    """An admin's key for the work, and another user's key whose budget the test spends
    (the rate limit counts per user)."""
    users = AuthStore(open_engine(Settings.load(data_dir=data)))
    admin = users.create_user("root", role="admin")
    spender = users.create_user("spender")
    return users.create_key(admin.id, "work")[1], users.create_key(spender.id, "budget")[1]


def _start(data: Path, port: int) -> subprocess.Popen[bytes]:
    env = {"CITEWELL_AUTH": "required", "CITEWELL_RATE_LIMIT_PER_MINUTE": "40"}
    return start_server(data, port, env, ("--workers", "2"))


def _children(parent: int) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-P", str(parent)], check=False, capture_output=True, text=True
    )
    return [int(p) for p in found.stdout.split()]


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_two_api_processes_share_the_queue_and_the_rate_limits(tmp_path):
    data, port = tmp_path / "data", free_port()
    work, budget = _keys(data)
    server = _start(data, port)
    try:
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {work}"}
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            assert client.post("/api/v1/knowledge", json={"name": "records"}).status_code == 201
            docs = documents(24)
            batches = []
            for i in range(0, len(docs), 6):
                files = [("files", (n, body)) for n, body in docs[i : i + 6]]
                reply = client.post("/api/v1/knowledge/records/batch", files=files)
                assert reply.status_code == 202, reply.text
                batches.append(reply.json()["batch_id"])
            deadline = time.monotonic() + 180
            while not all(client.get(f"/api/v1/jobs/batches/{b}").json()["done"] for b in batches):
                assert time.monotonic() < deadline, "the batches did not finish"
                time.sleep(0.5)
            files = client.get("/api/v1/knowledge/records").json()["files"]
        # Each file indexed once, by the one process holding the job-worker lock.
        assert sorted(f["name"] for f in files) == sorted(n for n, _ in docs)
        assert all(f["chunk_count"] == 1 for f in files)
        assert (data / "job-worker.lock").exists()
        # A fresh connection per request: the kernel spreads them over both processes,
        # and the 40-a-minute budget holds across them (plus what refilled meanwhile: a
        # busy CI machine took long enough for 3 more than the 2 once allowed here).
        began = time.monotonic()
        codes = [
            httpx.get(
                f"{base}/api/v1/knowledge", headers={"Authorization": f"Bearer {budget}"}
            ).status_code
            for _ in range(60)
        ]
        refilled = (time.monotonic() - began) * 40 / 60
        assert 40 <= codes.count(200) <= 40 + refilled + 1
        assert codes.count(429) == 60 - codes.count(200)
        children = _children(server.pid)
        assert len(children) >= 2  # the two API processes (and multiprocessing's tracker)
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in children):
        assert time.monotonic() < deadline, "the API processes outlived their parent"
        time.sleep(0.2)
