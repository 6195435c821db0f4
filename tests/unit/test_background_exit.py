"""An exiting process waits for its stores' background calls: a Lance call still running on
a daemon thread when the interpreter finalizes aborts the process (SIGABRT), as a
``citewell check --repair`` did once its repair was printed."""

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from citewell.stores import background
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.kb_copies import KbCopies
from citewell.stores.memory.keeper import SnapshotKeeper
from citewell.stores.memory.shared_copy import write_copy
from citewell.stores.memory.snapshot import TableScan
from tests.unit.test_compact_copy import table


@pytest.fixture
def exit_flag() -> Iterator[threading.Event]:
    """``background.exiting`` set by a test, cleared after it (it is process-wide)."""
    yield background.exiting
    background.exiting.clear()


@dataclass
class Held:
    """A store read that runs until the test lets it go."""

    gate: threading.Event = field(default_factory=threading.Event)
    reading: threading.Event = field(default_factory=threading.Event)

    def hold(self) -> None:
        self.reading.set()
        assert self.gate.wait(5)

    def version(self) -> int:
        return 1


@dataclass
class BlockingTable(Held):
    """A snapshot source whose load is held."""

    loads: int = 0

    def count_rows(self) -> int:
        return 10

    def load(self) -> TableScan:
        self.loads += 1
        self.hold()
        return TableScan(1, 0, lambda columns: iter(()))  # (only its version is read)

    def kept(self) -> bool:
        return False


def _exit_in_thread(part: background.BackgroundWork) -> tuple[threading.Thread, list[bool]]:
    """What the exit does to one part (``wait_for_all`` does it to every part this process
    made, other tests' too)."""
    background.exiting.set()
    ended: list[bool] = []
    thread = threading.Thread(target=lambda: ended.append(part.wait(10)))
    thread.start()
    return thread, ended


def test_the_exit_waits_for_a_snapshot_read_and_no_other_starts(exit_flag):
    table = BlockingTable()
    keeper = SnapshotKeeper(table, max_rows=100)
    assert keeper.current() is None  # the build reads in the background
    assert table.reading.wait(5)
    exiting, ended = _exit_in_thread(keeper._reading)
    time.sleep(0.3)
    assert exiting.is_alive()  # waiting for the load
    table.gate.set()
    exiting.join(10)
    assert ended == [True]
    keeper.changed()  # a write, as if after the exit had begun: no new read starts
    assert keeper.current() is None
    time.sleep(0.3)
    assert table.loads == 1


@dataclass
class BlockingView:
    held: Held
    version: int = 1

    def keep(self, copies):
        return dict(copies)

    def load(self, key):
        self.held.hold()


@dataclass
class BlockingKbSource(Held):
    """A KB copies' source whose copies' loads are held."""

    views: int = 0

    @contextlib.contextmanager
    def view(self):
        self.views += 1
        yield BlockingView(self)


def test_the_exit_waits_for_a_kb_copy_being_made_and_no_other_starts(exit_flag):
    source = BlockingKbSource()
    copies = KbCopies(source, budget_bytes=1 << 20)
    copies._request(frozenset({"kb-1"}))
    assert source.reading.wait(5)
    copies._request(frozenset({"kb-2"}))  # queued behind the first
    exiting, ended = _exit_in_thread(copies._refreshing)
    time.sleep(0.3)
    assert exiting.is_alive()
    source.gate.set()
    exiting.join(10)
    assert ended == [True]
    time.sleep(0.3)
    assert source.views == 1  # the queued copy was not started


def test_a_copy_of_the_table_stops_at_its_next_batch_once_exiting(exit_flag, tmp_path):
    data = table(3000)
    read: list[int] = []

    def batches(columns):
        for batch in TableScan.of(1, data, batch_rows=1000).batches(columns):
            read.append(batch.num_rows)
            exit_flag.set()  # the exit begins while the first batch is written
            yield batch

    with pytest.raises(background.Exiting):
        write_copy(TableScan(1, 3000, batches), tmp_path / "v1", VectorIndexPolicy())
    assert read == [1000] and not (tmp_path / "v1").exists()


@dataclass(eq=False)
class Part:
    seconds: float
    asked: list[float] = field(default_factory=list)

    def wait(self, timeout: float | None = None) -> bool:
        assert background.exiting.is_set()  # told first, so loops start nothing new
        self.asked.append(timeout or 0.0)
        time.sleep(min(self.seconds, timeout or 0.0))
        return self.seconds <= (timeout or 0.0)


class Broken:
    def wait(self, timeout: float | None = None) -> bool:
        raise RuntimeError("a part that fails to wait")


def test_the_exit_gives_every_part_what_is_left_of_one_deadline(exit_flag, monkeypatch):
    slow, quick = Part(0.5), Part(0.0)
    parts = [Broken(), slow, quick]
    monkeypatch.setattr(background, "_PARTS", parts)  # (a WeakSet in a process)
    assert not background.wait_for_all(seconds=0.3)  # the slow part was still at work
    assert slow.asked == [pytest.approx(0.3, abs=0.05)]
    assert quick.asked == [0.0]  # also after another part failed


def test_the_exit_cuts_short_a_big_copys_wait_for_a_quiet_table(exit_flag):
    from tests.unit.test_snapshot_keeper import BigTable

    table = BigTable()
    keeper = SnapshotKeeper(table, max_rows=100, big_rows=1000, big_bytes=2000, quiet=20.0)
    assert keeper.current() is None  # the build waits 20 s for the table to go quiet
    time.sleep(0.3)
    began = time.monotonic()
    exiting, ended = _exit_in_thread(keeper._reading)
    exiting.join(10)
    assert ended == [True] and time.monotonic() - began < 2  # 20 s and more before
    assert table.indexes == []  # no copy was started
