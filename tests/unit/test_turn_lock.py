"""The ingestor's lock serves waiters in the order they asked: the job worker that releases
and asks again at once goes behind an upload that was already waiting."""

from __future__ import annotations

import threading
import time

from citewell.jobs.turns import TurnLock


def test_a_waiting_upload_goes_before_the_worker_asking_again():
    lock, order = TurnLock(), []
    lock.acquire()  # the worker holds it for a slice

    def upload() -> None:
        with lock:
            order.append("upload")

    waiter = threading.Thread(target=upload)
    waiter.start()
    time.sleep(0.05)  # the upload waits
    lock.release()
    with lock:  # the worker's next slice, asked for at once
        order.append("worker")
    waiter.join(5)
    assert order == ["upload", "worker"]


def test_non_blocking_and_timed_out_asks_give_their_turn_away():
    lock = TurnLock()
    assert lock.acquire(blocking=False) and lock.locked()
    assert not lock.acquire(blocking=False)
    assert not lock.acquire(timeout=0.05)  # its ticket is skipped, not left blocking others
    lock.release()
    assert lock.acquire(timeout=1)
    lock.release()
    assert not lock.locked()
