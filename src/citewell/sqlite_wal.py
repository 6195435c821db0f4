"""Write-ahead logging for SQLite files that several processes open at once."""

from __future__ import annotations

import sqlite3
import time

RETRY_SECONDS = 0.02


def use_wal(db: sqlite3.Connection, wait_seconds: float) -> None:
    """Switch the file to write-ahead logging (a no-op once it is). The switch answers
    "database is locked" at once, without the busy timeout, while another connection
    switches the file or writes to it, so it is tried again until ``wait_seconds`` pass."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(RETRY_SECONDS)
