"""``WriteBehind``: an import's batch written in a thread while the next is made, one at a
time and in order, its errors raised to the caller."""

from __future__ import annotations

import contextvars
import threading

import pytest

from citewell.ingest.write_behind import WriteBehind

TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="nobody")


def test_writes_run_one_at_a_time_in_order_off_the_callers_thread():
    written: list[tuple[int, bool, str]] = []
    done: list[int] = []
    in_flight = threading.Semaphore(1)

    def write(n: int) -> None:
        assert in_flight.acquire(blocking=False), "two writes at once"
        written.append((n, threading.current_thread() is threading.main_thread(), TENANT.get()))
        in_flight.release()

    TENANT.set("alice")
    with WriteBehind(lambda: done.append(len(written))) as writes:
        for n in range(5):
            writes.submit(lambda n=n: write(n))
    assert [n for n, _, _ in written] == [0, 1, 2, 3, 4]
    assert not any(on_main for _, on_main, _ in written)
    assert {tenant for _, _, tenant in written} == {"alice"}  # the caller's context goes along
    assert done == [1, 2, 3, 4, 5]  # after each write, once it is done


def test_a_failed_write_is_raised_at_the_next_submit_and_stops_the_writes():
    written: list[int] = []

    def fail() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"), WriteBehind() as writes:
        writes.submit(fail)
        writes.submit(lambda: written.append(2))
    assert written == []


def test_the_callers_error_wins_and_the_write_in_flight_ends_first():
    started, release = threading.Event(), threading.Event()
    finished: list[bool] = []

    def slow() -> None:
        started.set()
        release.wait(5)
        finished.append(True)

    with pytest.raises(ValueError, match="bad row"), WriteBehind() as writes:
        writes.submit(slow)
        started.wait(5)
        release.set()
        raise ValueError("bad row")
    assert finished == [True]  # not left running behind the caller's error
