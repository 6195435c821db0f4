"""A real Prometheus (Debian's `prometheus`, installed by scripts/setup-prometheus) scrapes
`citewell serve --workers 2`: the request count it reports, summed over both API
processes, equals what the test sent."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import httpx
import pytest

from citewell.testing.processes import free_port
from citewell.testing.served import start_server

pytestmark = pytest.mark.e2e
SENT = 37


def _prometheus() -> str:
    found = shutil.which("prometheus")
    assert found, "prometheus is missing: scripts/setup-prometheus installs it (apt)"
    return found


def _query(base: str, expression: str) -> float | None:
    answer = httpx.get(f"{base}/api/v1/query", params={"query": expression}, timeout=10).json()
    results = answer["data"]["result"]
    return float(results[0]["value"][1]) if results else None


def test_prometheus_counts_what_two_api_processes_answered(tmp_path):
    port, prom_port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(  # JSON is YAML
            {
                "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
                "scrape_configs": [
                    {"job_name": "citewell", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
                ],
            }
        )
    )
    server = start_server(tmp_path / "data", port, {}, ("--workers", "2"))
    prometheus = subprocess.Popen(
        [
            _prometheus(),
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{prom_port}"
    try:
        for _ in range(SENT):  # a connection each: the kernel spreads them over both processes
            httpx.get(f"http://127.0.0.1:{port}/api/v1/knowledge").raise_for_status()
        expression = (
            'sum(citewell_http_requests_total{route="/api/v1/knowledge",method="GET",status="200"})'
        )
        deadline, seen = time.monotonic() + 90, None
        while time.monotonic() < deadline:
            try:
                seen = _query(base, expression)
            except httpx.HTTPError:
                seen = None  # Prometheus still starting
            if seen == SENT:
                break
            time.sleep(1)
        assert seen == SENT
        assert _query(base, 'up{job="citewell"}') == 1
        # A scrape is counted once answered: the next scrape reports it.
        scrapes = 'sum(citewell_http_requests_total{route="/metrics"})'
        while (_query(base, scrapes) or 0) < 1 and time.monotonic() < deadline + 10:
            time.sleep(0.5)
        assert (_query(base, scrapes) or 0) >= 1
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)
        server.terminate()
        server.wait(timeout=60)
