"""The ingestor's lock serves waiters in the order they asked: the job worker that releases
and asks again at once goes behind an upload that was already waiting."""

from __future__ import annotations

import threading
import time

from citewell.app import Citewell
from citewell.ingest.types import ItemEvent
from citewell.jobs.turns import TurnLock
from citewell.sources import SourceItem


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


def test_it_says_whether_someone_besides_the_holder_waits():
    lock = TurnLock()
    assert not lock.waiting()
    lock.acquire()
    assert not lock.waiting()
    assert not lock.acquire(timeout=0.01)  # gave up: not waiting any more
    assert not lock.waiting()
    waiter = threading.Thread(target=lambda: lock.acquire() and lock.release())
    waiter.start()
    deadline = time.monotonic() + 5
    while not lock.waiting():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    lock.release()
    waiter.join(5)
    assert not lock.waiting() and not lock.locked()


def test_a_worker_ingest_ends_its_hold_once_an_upload_waits(app: Citewell) -> None:
    """The job worker's ingest (yield_to_waiters) begins no further file once another
    writer asks for the lock: the upload waits for the file in hand, not the batch."""
    app.catalog.ensure_kb("kb")
    texts = [f"Note {n} is about the {word} budget." for n, word in enumerate("ABCDEF")]
    items = [SourceItem(f"{n}.md", f"{n}.md", lambda t=t: t.encode()) for n, t in enumerate(texts)]
    order: list[str] = []
    lock = app.ingestor.lock

    def upload() -> None:
        with lock:
            order.append(f"upload after {len(app.catalog.links(kb_ids=[app.kb_id('kb')]))}")

    def observe(event: ItemEvent) -> None:
        if event.key == "0.md" and event.state == "parsing":  # the first file begins
            threading.Thread(target=upload).start()
            while not lock.waiting():
                time.sleep(0.01)

    report = app.ingestor.ingest(items, "kb", observer=observe, yield_to_waiters=True)
    assert (report.files_indexed, report.files_left) == (1, len(items) - 1)
    rest = app.ingestor.ingest(items[1:], "kb", yield_to_waiters=True)
    assert (rest.files_indexed, rest.files_left) == (len(items) - 1, 0)
    assert order == ["upload after 1"]  # it went between the two holds
