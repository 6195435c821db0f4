"""Switching a SQLite file to write-ahead logging while another connection writes to it."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from citewell.sqlite_wal import use_wal


def _writing(path) -> sqlite3.Connection:  # type: ignore[no-untyped-def]
    """A connection holding the write lock of a file still in rollback-journal mode."""
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")
    return writer


def test_the_switch_waits_for_a_writer_to_finish(tmp_path):
    path = tmp_path / "a.sqlite"
    writer = _writing(path)
    threading.Timer(0.2, lambda: writer.execute("COMMIT")).start()
    reader = sqlite3.connect(path, timeout=0.05)
    use_wal(reader, wait_seconds=10)
    assert reader.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert reader.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_a_writer_that_never_finishes_ends_the_wait_with_sqlites_error(tmp_path):
    path = tmp_path / "a.sqlite"
    writer = _writing(path)
    reader = sqlite3.connect(path, timeout=0.05)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        use_wal(reader, wait_seconds=0.2)
    writer.execute("ROLLBACK")
