"""What the servers the tests start share: a free port on 127.0.0.1, a folder handed to an
unprivileged user when the tests run as root, waiting for the port, and stopping by PID."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

UNPRIVILEGED = "nobody"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_as_unprivileged(root: Path) -> str | None:
    """As root: ``root`` (and what it holds) goes to ``nobody``, the user to run as. Not
    root: None (run as oneself)."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam(UNPRIVILEGED)
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            os.chown(path, entry.pw_uid, entry.pw_gid)
    return UNPRIVILEGED


def wait_listening(
    process: subprocess.Popen[bytes],
    port: int,
    what: str,
    log: Callable[[], str],
    seconds: float = 20,
) -> None:
    """Until ``port`` takes connections; the log in the error if the process ends first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} stopped at start:\n{log()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen within {seconds:.0f} s")


def log_of(path: Path) -> Callable[[], str]:
    """What ``wait_listening`` shows when the process ends at start: its log file."""
    return lambda: path.read_text(errors="replace") if path.exists() else ""


def stop(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL after 10 s: the process this fixture started, by its PID."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
