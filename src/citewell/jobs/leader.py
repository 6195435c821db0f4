"""One job worker among several server processes on an embedded data dir.

LanceDB and SQLite take one writer at a time, so with ``citewell serve --workers K`` on the
embedded store only one process runs queued jobs: the one holding an exclusive lock on a
file in the data dir. The operating system releases the lock when its process ends, however
it ends, and another process takes over within ``poll`` seconds. (On PostgreSQL every
process runs jobs: claims and leases keep them apart.)
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path

LOCK_FILE = "job-worker.lock"


class WorkerElection:
    def __init__(self, data_dir: Path, become_worker: Callable[[], None], poll: float = 2.0):
        self.path = data_dir / LOCK_FILE
        self.become_worker = become_worker
        self.poll = poll
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Become the worker now if no other process is, else keep trying in the background."""
        if self._try():
            return
        self._thread = threading.Thread(target=self._wait, name="citewell-election", daemon=True)
        self._thread.start()

    def _wait(self) -> None:
        while not self._stop.wait(self.poll):
            if self._try():
                return

    def _try(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        self.become_worker()
        return True

    @property
    def elected(self) -> bool:
        return self._fd is not None

    def stop_trying(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def release(self) -> None:
        """Let another process be the worker (after this one's runner stopped)."""
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None
