"""An import's catalog rows beside the next batch's chunks (ingest.catalog_behind): the
parts run in order, one beside the caller's next work; the ingestor's lock is kept between
batches and let go only once nothing is pending, so another writer never finds chunks that
no catalog row names."""

from __future__ import annotations

import threading

import pytest

from citewell.ingest.catalog_behind import CatalogBehind
from citewell.jobs.turns import TurnLock


def test_a_catalog_part_runs_beside_the_next_batch_and_the_parts_keep_their_order():
    turns, done, beside = CatalogBehind(TurnLock()), [], threading.Event()

    def first() -> None:
        assert beside.wait(5), "the next batch's chunks did not run meanwhile"
        done.append("first")

    turns.take()
    turns.submit(first)
    beside.set()  # the next batch's chunks, while the first part waits for them
    turns.submit(lambda: done.append("second"))  # waits for the first
    turns.close()
    assert done == ["first", "second"]


def test_the_lock_is_kept_between_batches_until_another_writer_waits():
    lock = TurnLock()
    turns = CatalogBehind(lock)
    turns.take()
    turns.done()  # nobody waits: kept for the next batch
    assert lock.locked()
    turns.take()  # not taken twice (a TurnLock is not reentrant)
    written = threading.Event()
    turns.submit(lambda: (threading.Event().wait(0.2), written.set()))
    seen: list[bool] = []

    def other_writer() -> None:
        with lock:
            seen.append(written.is_set())

    waiter = threading.Thread(target=other_writer)
    waiter.start()
    while not lock.waiting():
        threading.Event().wait(0.01)
    turns.done()  # another waits: the pending part is written, then the lock let go
    waiter.join(5)
    assert seen == [True]
    turns.close()
    assert not lock.locked()


def _failing_part() -> tuple[TurnLock, CatalogBehind]:
    """A lock held by a CatalogBehind whose pending catalog part fails."""
    lock = TurnLock()
    turns = CatalogBehind(lock)
    turns.take()

    def failing() -> None:
        raise OSError("disk full")

    turns.submit(failing)
    return lock, turns


def test_a_failed_catalog_part_is_raised_and_the_lock_let_go():
    lock, turns = _failing_part()
    with pytest.raises(OSError, match="disk full"):
        turns.submit(lambda: None)  # the next batch learns of it
    turns.close()
    assert not lock.locked()


def test_after_another_error_a_pending_failure_is_logged_not_raised(caplog):
    lock, turns = _failing_part()
    turns.close(failed=True)
    assert not lock.locked()
    assert "A catalog write failed after another error: disk full" in caplog.text
