"""Liveness and readiness probes: no key needed, nothing about the data."""

from __future__ import annotations

import time


def test_readiness_says_whether_the_per_process_caches_are_on(server):
    """On SQLite at once; on PostgreSQL once the change listener hears its own ping."""
    with server.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        deadline = time.monotonic() + 10
        while client.get("/readyz").json()["caches"] != "on":
            assert time.monotonic() < deadline, "the caches stayed off"
            time.sleep(0.05)
        assert client.get("/readyz").json() == {"status": "ready", "caches": "on"}
