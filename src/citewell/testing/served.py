"""``citewell serve`` as its own process group, as the end-to-end tests and the benchmarks
start it: waited for until /healthz answers, killed whole (its extraction workers too), and
the small Markdown documents they queue."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx


def start_server(
    data: Path,
    port: int,
    env: dict[str, str] | None = None,
    options: tuple[str, ...] = (),
    log: Path | None = None,
) -> subprocess.Popen[bytes]:
    """`citewell serve` on 127.0.0.1:``port``, with ``env`` added to this environment;
    its log lines (stderr) into ``log`` when given."""
    command = [sys.executable, "-m", "citewell", "--data-dir", str(data), "serve", *options]
    server = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab") if log is not None else subprocess.DEVNULL,
        env={**os.environ, "CITEWELL_AUTH": "none", **(env or {})},
        start_new_session=True,  # its own process group: the kill takes its workers too
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start (exit code {server.poll()})")
        time.sleep(0.1)


def start_worker(data: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`citewell worker` (the job queue's worker alone), with ``env`` added."""
    return subprocess.Popen(
        [sys.executable, "-m", "citewell", "--data-dir", str(data), "worker"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
        start_new_session=True,  # its own process group: the kill takes its helpers too
    )


def kill(server: subprocess.Popen[bytes]) -> None:
    os.killpg(server.pid, signal.SIGKILL)
    server.wait()


def documents(count: int) -> list[tuple[str, bytes]]:
    return [
        (
            f"doc-{i:05d}.md",
            f"# Record {i}\n\nMeasurement {i} was taken at station {i * 7}.".encode(),
        )
        for i in range(count)
    ]
