"""The in-memory snapshot is brought up to date in the background: a search never waits
for a whole table to be read (only, briefly, for the rows written since a big copy), and
never gets one that misses a write of this process."""

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from citewell.stores.memory.changes import ChangedCopy
from citewell.stores.memory.keeper import CATCH_UP_WAIT, SnapshotKeeper
from citewell.stores.memory.snapshot import CopyPutOff, TableChanges, TableSnapshot


@dataclass(frozen=True)
class FakeSnapshot:
    version: int


@dataclass
class FakeTable:
    """A SnapshotSource whose loads block until the test lets them go; each records the
    version it read."""

    gate: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    started: list[int] = field(default_factory=list)
    at: int = 1
    rows: int = 10
    reads: int = 0

    def version(self) -> int:
        self.reads += 1
        return self.at

    def count_rows(self) -> int:
        return self.rows

    def load(self) -> FakeSnapshot:
        self.started.append(self.at)
        version = self.at
        assert self.gate.acquire(timeout=5)
        return FakeSnapshot(version)

    def kept(self) -> bool:
        return False


def settled(keeper: SnapshotKeeper):
    for _ in range(200):
        if not keeper._building:
            return keeper.current()
        time.sleep(0.01)
    raise AssertionError("the build did not finish")


def test_searches_do_not_wait_for_a_build():
    table = FakeTable()
    keeper = SnapshotKeeper(table, max_rows=100)
    began = time.perf_counter()
    assert keeper.current() is None  # building: the caller reads the table itself
    assert keeper.current() is None
    assert time.perf_counter() - began < 0.5
    table.gate.release()
    assert settled(keeper) == FakeSnapshot(1)
    assert table.started == [1]


def test_a_write_during_a_build_makes_it_build_again():
    table = FakeTable()
    keeper = SnapshotKeeper(table, max_rows=100)
    assert keeper.current() is None
    for _ in range(100):
        if table.started:
            break
        time.sleep(0.01)
    table.at = 2
    keeper.changed()  # this process wrote while version 1 was being read
    table.gate.release()
    table.gate.release()
    assert settled(keeper) == FakeSnapshot(2)
    assert table.started == [1, 2]


def test_a_large_table_gets_no_snapshot_and_no_rebuilds():
    table = FakeTable(rows=500)
    keeper = SnapshotKeeper(table, max_rows=100)
    assert keeper.current() is None
    assert settled(keeper) is None
    assert keeper.current() is None and not keeper._building
    assert table.started == []  # never read whole


def test_a_large_table_is_not_asked_its_version_before_every_search():
    table = FakeTable(rows=500)
    keeper = SnapshotKeeper(table, max_rows=100, check_interval=0.0)
    assert keeper.current() is None  # starts the build, which finds the table too large
    assert settled(keeper) is None
    reads = table.reads
    for _ in range(10):
        assert keeper.current() is None
    assert table.reads == reads  # rechecked once a second (has it shrunk?), not per search


def test_another_process_write_is_seen_within_the_check_interval():
    """PostgreSQL's keeper reads the version before every use: a write committed by any
    process retires the snapshot at once; LanceDB's reads it at most once a second."""
    for interval, seen_at_once in ((0.0, True), (60.0, False)):
        table = FakeTable()
        keeper = SnapshotKeeper(table, max_rows=100, check_interval=interval)
        keeper.current()
        table.gate.release()
        assert settled(keeper) == FakeSnapshot(1)
        table.at = 2  # written elsewhere: no changed() in this process
        assert (keeper.current() is None) is seen_at_once


@dataclass(frozen=True)
class BigSnapshot:
    version: int
    nbytes: int


@dataclass
class BigTable:
    """A SnapshotSource past the ANN threshold whose copies take ``nbytes``."""

    at: int = 1
    rows: int = 500
    nbytes: int = 1000
    indexes: list[object] = field(default_factory=list)

    def version(self) -> int:
        return self.at

    def count_rows(self) -> int:
        return self.rows

    def load(self, index=None) -> BigSnapshot:
        self.indexes.append(index)
        return BigSnapshot(self.at, self.nbytes)

    def changes(self, since: int) -> None:
        return None  # not known: the copy is made again

    def saved(self, index) -> None:
        return None

    def kept(self) -> bool:
        return False


def test_a_big_table_is_copied_with_an_index_when_it_fits():
    table = BigTable()
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0)
    assert keeper.current() is None
    assert settled(keeper) == BigSnapshot(1, 1000)
    assert table.indexes == [keeper._index]


def test_a_big_copy_over_its_memory_is_dropped_and_not_tried_again():
    table = BigTable(nbytes=4000)
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0)
    assert keeper.current() is None
    assert settled(keeper) is None
    assert keeper._big_rows == 250  # 500 rows took twice the budget
    table.at = 2  # a write: the table is still past what fits, so no new load
    keeper.current()
    assert settled(keeper) is None and len(table.indexes) == 1


def test_a_big_copy_waits_for_the_table_to_go_quiet():
    table = BigTable()
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.3)
    began = time.perf_counter()
    assert keeper.current() is None
    table.at = 2  # another process writes while the keeper waits
    assert settled(keeper) == BigSnapshot(2, 1000)
    assert time.perf_counter() - began >= 0.3


def test_a_big_copy_that_fails_is_not_tried_again():
    class Failing(BigTable):
        def load(self, index=None):
            self.indexes.append(index)
            raise MemoryError

    table = Failing()
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0)
    assert keeper.current() is None
    assert settled(keeper) is None
    time.sleep(1.1)  # past the retry interval of a failed build
    keeper.current()
    assert settled(keeper) is None and len(table.indexes) == 1 and keeper._big_rows == 0


def test_a_big_copy_waits_for_free_memory_of_twice_its_size(monkeypatch):
    from citewell.stores.memory import keeper as snapshot_keeper

    monkeypatch.setattr(snapshot_keeper, "MEMORY_RETRY", 0.2)
    free = [1999]  # 500 rows of 2 bytes (2,000 / 1,000) while made twice over: 2,000
    table = BigTable()
    keeper = SnapshotKeeper(
        table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0,
        memory_free=lambda: free[0],
    )  # fmt: skip
    assert keeper.current() is None
    assert settled(keeper) is None and table.indexes == []  # put off: the table is read
    free[0] = 2000  # memory freed (an LLM unloaded)
    time.sleep(0.25)  # past the put-off's retry
    assert keeper.current() is None
    assert settled(keeper) == BigSnapshot(1, 1000)


def test_a_big_copy_is_made_when_free_memory_cannot_be_read():
    table = BigTable()
    keeper = SnapshotKeeper(
        table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0, memory_free=lambda: None
    )
    assert keeper.current() is None
    assert settled(keeper) == BigSnapshot(1, 1000)


def stats_state(keeper: SnapshotKeeper, needed_mb: float = 1.0, budget_mb: int = 2) -> str:
    return keeper.big_copy_stats(budget_mb, needed_mb).state


def test_the_copys_state_says_why_searches_read_the_table():
    table = BigTable()
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.3)
    assert stats_state(keeper) == "waiting"  # asking starts the build, which waits for quiet
    time.sleep(0.1)
    assert stats_state(keeper) == "waiting"
    assert settled(keeper) == BigSnapshot(1, 1000)
    table.at = 2
    keeper.changed()  # a write of this process, whose changes the table cannot tell
    assert stats_state(keeper) == "waiting"
    assert stats_state(keeper, needed_mb=0.0) == "not_needed"  # below the ANN threshold
    assert stats_state(keeper, needed_mb=5.0) == "too_big"


def test_the_copys_state_names_too_little_memory_and_a_failure(monkeypatch):
    table = BigTable()
    keeper = SnapshotKeeper(
        table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0, memory_free=lambda: 10
    )
    keeper.current()
    assert settled(keeper) is None
    assert stats_state(keeper) == "put_off"

    class Failing(BigTable):
        def load(self, index=None):
            raise MemoryError

    keeper = SnapshotKeeper(Failing(), max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0)
    keeper.current()
    assert settled(keeper) is None
    assert stats_state(keeper) == "failed"


def test_a_table_past_what_fits_is_too_big():
    keeper = SnapshotKeeper(BigTable(rows=5000), max_rows=100, big_rows=1000, big_bytes=2000)
    keeper.current()
    assert settled(keeper) is None
    assert stats_state(keeper) == "too_big"


def _rows(files: list[str], seed: int) -> pa.Table:
    """Two rows a file, random unit vectors, in KB "a"."""
    rng = np.random.default_rng(seed)
    ids = [f"{f}-c{c}" for f in files for c in range(2)]
    vectors = rng.standard_normal((len(ids), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    count = len(ids)
    return pa.table({
        "id": ids, "file_id": [i.split("-")[0] for i in ids], "kb_ids": [["a"]] * count,
        "idx": pa.array(range(count), pa.int32()), "text": ids, "start": [0] * count,
        "end": [1] * count, "page": pa.array([None] * count, pa.int32()),
        "headings": [[] for _ in ids], "file_name": ["x.md"] * count, "terms": ids,
        "vector": list(vectors),
    })  # fmt: skip


@dataclass
class ChangingTable:
    """A big table (20 rows) whose changes since its copy take ``read_seconds`` to read:
    file f10 was added at version 2."""

    at: int = 1
    read_seconds: float = 0.0

    def version(self) -> int:
        return self.at

    def count_rows(self) -> int:
        return 20 if self.at == 1 else 22

    def load(self, index=None) -> TableSnapshot:
        return TableSnapshot.from_arrow(1, _rows([f"f{i}" for i in range(10)], 1), 8, index)

    def changes(self, since: int) -> TableChanges:
        time.sleep(self.read_seconds)
        added = TableSnapshot.from_arrow(2, _rows(["f10"], 2), 8)
        return TableChanges(frozenset({"f10"}), added, 22)

    def saved(self, index) -> None:
        return None

    def kept(self) -> bool:
        return False


def _copied(table: ChangingTable) -> SnapshotKeeper:
    keeper = SnapshotKeeper(
        table, max_rows=10, check_interval=0.0, big_rows=1000, big_bytes=10**9, quiet=0.0
    )
    keeper.current()
    assert settled(keeper) is not None
    table.at = 2  # another process wrote
    return keeper


def test_a_search_waits_for_the_few_rows_written_since_the_copy():
    """Without the wait, the first searches after another process's write went to the
    table (a second each in PostgreSQL at a million chunks)."""
    keeper = _copied(ChangingTable(read_seconds=0.1))
    found = keeper.current()
    assert isinstance(found, ChangedCopy) and found.changed_rows == 2
    assert keeper._catch_up_took is not None and keeper._catch_up_took >= 0.1


def test_a_slow_reading_of_the_changes_sends_searches_to_the_table():
    table = ChangingTable(read_seconds=CATCH_UP_WAIT + 0.3)
    keeper = _copied(table)
    began = time.perf_counter()
    assert keeper.current() is None  # waited its most, then reads the table
    assert CATCH_UP_WAIT - 0.05 <= time.perf_counter() - began < CATCH_UP_WAIT + 0.25
    assert isinstance(settled(keeper), ChangedCopy)
    table.at = 3  # the next wait is bounded by a few times that reading, not less
    began = time.perf_counter()
    assert keeper.current() is None
    assert time.perf_counter() - began >= CATCH_UP_WAIT - 0.05


def test_a_report_of_the_copy_does_not_wait_for_the_changes():
    """/api/v1/stats/store and readiness probes ask about the copy: right after another
    process's write they answer at once, the copy not current until its changes are read."""
    keeper = _copied(ChangingTable(read_seconds=0.3))
    began = time.perf_counter()
    assert keeper.big_copy_stats(1024, 1.0).current is False
    assert time.perf_counter() - began < 0.2
    assert isinstance(settled(keeper), ChangedCopy)
    assert keeper.big_copy_stats(1024, 1.0).current is True


@dataclass
class SavedCopyTable(BigTable):
    """A big table with a copy saved on the machine, mapped in ``map_seconds`` (None: the
    copy turns out unreadable)."""

    map_seconds: float | None = 0.3

    def saved(self, index) -> BigSnapshot | None:
        if self.map_seconds is None:
            return None
        time.sleep(self.map_seconds)
        return BigSnapshot(self.at, self.nbytes)

    def kept(self) -> bool:
        return True


def test_a_first_search_waits_for_the_saved_copy_to_be_mapped():
    """Not LanceDB's indexes loaded for the seconds the mapping takes (1.4 GB a process at
    ten million chunks, kept after)."""
    table = SavedCopyTable()
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0)
    began = time.perf_counter()
    assert keeper.current() == BigSnapshot(1, 1000)
    assert 0.25 <= time.perf_counter() - began < 5
    assert table.indexes == []  # mapped, not made
    assert keeper.current(wait=False) == BigSnapshot(1, 1000)


def test_a_saved_copy_that_cannot_be_read_sends_searches_to_the_table_at_once():
    table = SavedCopyTable(map_seconds=None)
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=30.0)
    began = time.perf_counter()
    assert keeper.current() is None  # the copy is made once the table is quiet: not waited on
    assert time.perf_counter() - began < 2


def test_a_report_does_not_wait_for_the_saved_copy():
    table = SavedCopyTable(map_seconds=0.5)
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0)
    began = time.perf_counter()
    assert keeper.current(wait=False) is None
    assert time.perf_counter() - began < 0.3
    assert settled(keeper) == BigSnapshot(1, 1000)


def test_a_copy_put_off_for_want_of_disk_is_tried_again(monkeypatch):
    from citewell.stores.memory import keeper as snapshot_keeper

    monkeypatch.setattr(snapshot_keeper, "MEMORY_RETRY", 0.2)

    @dataclass
    class ShortOfDisk(BigTable):
        short: bool = True

        def load(self, index=None):
            if self.short:
                raise CopyPutOff("needs about 20,000 MB of disk")
            return super().load(index)

    table = ShortOfDisk()
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=0.0)
    assert keeper.current() is None
    assert settled(keeper) is None
    assert stats_state(keeper) == "put_off"  # not "failed": that one is never tried again
    table.short = False  # room made
    time.sleep(0.25)
    keeper.current()
    assert settled(keeper) == BigSnapshot(1, 1000)
