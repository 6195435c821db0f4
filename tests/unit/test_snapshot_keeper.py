"""The in-memory snapshot is brought up to date in the background: a search never waits
for it, and never gets one that misses a write of this process."""

import threading
import time
from dataclasses import dataclass

import pytest

from citewell.stores import snapshot_keeper
from citewell.stores.snapshot_keeper import SnapshotKeeper


@dataclass
class FakeTable:
    version: int = 1
    rows: int = 10

    def count_rows(self) -> int:
        return self.rows


@dataclass(frozen=True)
class FakeSnapshot:
    version: int


@pytest.fixture
def loads(monkeypatch):
    """Builds block until the test lets them go; each records the version it read."""
    gate, started = threading.Semaphore(0), []

    def load(table, dimension):
        started.append(table.version)
        version = table.version
        assert gate.acquire(timeout=5)
        return FakeSnapshot(version)

    monkeypatch.setattr(snapshot_keeper.TableSnapshot, "load", load)
    return gate, started


def settled(keeper: SnapshotKeeper):
    for _ in range(200):
        if not keeper._building:
            return keeper.current()
        time.sleep(0.01)
    raise AssertionError("the build did not finish")


def test_searches_do_not_wait_for_a_build(loads):
    gate, started = loads
    keeper = SnapshotKeeper(FakeTable(), 8, max_rows=100)
    began = time.perf_counter()
    assert keeper.current() is None  # building: the caller reads the table itself
    assert keeper.current() is None
    assert time.perf_counter() - began < 0.5
    gate.release()
    assert settled(keeper) == FakeSnapshot(1)
    assert started == [1]


def test_a_write_during_a_build_makes_it_build_again(loads):
    gate, started = loads
    table = FakeTable()
    keeper = SnapshotKeeper(table, 8, max_rows=100)
    assert keeper.current() is None
    for _ in range(100):
        if started:
            break
        time.sleep(0.01)
    table.version = 2
    keeper.changed()  # this process wrote while version 1 was being read
    gate.release()
    gate.release()
    assert settled(keeper) == FakeSnapshot(2)
    assert started == [1, 2]


def test_a_large_table_gets_no_snapshot_and_no_rebuilds(loads):
    table = FakeTable(rows=500)
    keeper = SnapshotKeeper(table, 8, max_rows=100)
    assert keeper.current() is None
    assert settled(keeper) is None
    assert keeper.current() is None and not keeper._building
    assert loads[1] == []  # never read whole
