"""The job runner takes its next claim while one writes: a full claim's successor is claimed
and prepared (parsed, split, embedded) in another thread, and handed back if the runner
stops before running it."""

from __future__ import annotations

import threading
import time

import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.engine.runner import JobRunner
from citewell.jobs.store import JobStore
from citewell.testing.fakes import FakeHashEmbedder

pytestmark = pytest.mark.e2e

NOTES = [(f"note{i}.md", f"# Note {i}\n\nA grebe seen on day {i}.".encode()) for i in range(6)]


@pytest.fixture
def app(settings: Settings):
    made = Citewell.from_settings(settings, embedder=FakeHashEmbedder(16))
    yield made
    made.close()


def watched(runner: JobRunner, gate: threading.Event | None = None) -> list[int]:
    """Wraps the ingest handler's ``prepare``: the sizes of the groups it prepared (after
    ``gate`` opens, if given)."""
    handler = runner.handlers["ingest"]
    prepare, sizes = handler.prepare, []

    def held_back(kb_id, group):
        sizes.append(len(group))
        if gate is not None:
            gate.wait(20)
        return prepare(kb_id, group)

    handler.prepare = held_back
    return sizes


def states(app: Citewell, batch_id: str) -> list[str]:
    return sorted(job.state for job in app.jobs.find(batch_id=batch_id))


def test_claims_after_a_full_one_are_prepared_ahead_and_all_indexed(app):
    app.create_kb("birds")
    jobs = app.enqueue_uploads("birds", NOTES)
    runner = JobRunner(app.jobs, app.ingestor, app.storage, batch_files=2)
    sizes = watched(runner)
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while states(app, jobs[0].batch_id) != ["indexed"] * 6 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        runner.stop()
    assert states(app, jobs[0].batch_id) == ["indexed"] * 6
    assert sizes and set(sizes) == {2}  # claims of two, taken ahead of their turn
    assert len(app.files("birds")) == 6
    assert app.search("grebe day 5", ["birds"], k=1)[0].chunk.file_name == "note5.md"


def recorded(runner: JobRunner) -> list[list[str]]:
    """Wraps the ingest handler's ``run``: the names of each group it ran, in order."""
    handler, order = runner.handlers["ingest"], []
    run = handler.run

    def recording(kb_id, group, prepared=None):
        order.append(sorted(job.name for job in group))
        return run(kb_id, group, prepared) if prepared is not None else run(kb_id, group)

    handler.run = recording
    return order


def with_a_claim_ahead(app: Citewell, gate: threading.Event, added_by: str = ""):
    """NOTES queued; a started runner (claims of two) whose next claim, taken ahead, is
    held at ``gate`` while being prepared. The runner, the jobs and the runs' order."""
    app.create_kb("birds")
    jobs = app.enqueue_uploads("birds", NOTES, added_by)
    runner = JobRunner(app.jobs, app.ingestor, app.storage, batch_files=2)
    sizes, order = watched(runner, gate), recorded(runner)
    runner.start()
    deadline = time.monotonic() + 20
    while not sizes and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sizes, "no claim was taken ahead"
    return runner, jobs, order


def test_stopping_hands_back_the_claim_taken_ahead(app):
    gate = threading.Event()
    runner, jobs, _ = with_a_claim_ahead(app, gate)
    stopping = threading.Thread(target=runner.stop)
    stopping.start()  # waits for the claim being prepared ahead...
    time.sleep(0.2)
    gate.set()  # ...which then finishes, and is handed back unrun
    stopping.join(30)
    found = states(app, jobs[0].batch_id)
    assert "parsing" not in found and "embedding" not in found
    assert found.count("indexed") >= 2 and found.count("queued") >= 2
    again = JobRunner(app.jobs, app.ingestor, app.storage, batch_files=2)
    while again.run_once():  # handed back: any worker takes them at once, nothing is lost
        pass
    assert states(app, jobs[0].batch_id) == ["indexed"] * 6


def test_a_newcomer_queued_meanwhile_runs_before_the_claim_taken_ahead(app):
    gate = threading.Event()
    runner, _, order = with_a_claim_ahead(app, gate, added_by="alice")
    try:  # alice's second claim is being prepared, ahead...
        (bob,) = app.enqueue_uploads("birds", [("bob.md", b"# Bob\n\nA lone heron.")], "bob")
        gate.set()  # ...and bob's upload, queued meanwhile, still goes before it
        deadline = time.monotonic() + 20
        while app.jobs.get(bob.id).state != "indexed" and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        runner.stop()
    assert order[:3] == [["note0.md", "note1.md"], ["bob.md"], ["note2.md", "note3.md"]]


def test_stopping_does_not_wait_for_a_long_preparation(app):
    gate = threading.Event()
    runner, jobs, _ = with_a_claim_ahead(app, gate)
    try:
        began = time.monotonic()
        runner.stop()  # the claim being prepared ahead never finishes meanwhile
        assert time.monotonic() - began < 15
        found = states(app, jobs[0].batch_id)
        assert "parsing" not in found and found.count("queued") >= 2  # handed back
    finally:
        gate.set()


def test_jobs_run_alone_after_a_crash_take_turns_with_other_users(app):
    """A crashed worker's jobs run one claim each (jobs/lost.py); another user's upload
    queued meanwhile waits for one of them, not for all."""
    app.create_kb("birds")
    alices = app.enqueue_uploads("birds", NOTES[:3], "alice")
    crashed = JobStore(app.catalog.engine, lease_seconds=0.05)
    assert len(crashed.claim(10)) == 3  # a worker took them, then died
    time.sleep(0.1)
    assert app.jobs.requeue_expired() == 3
    (bob,) = app.enqueue_uploads("birds", [("bob.md", b"# Bob\n\nA lone heron.")], "bob")
    runner = JobRunner(app.jobs, app.ingestor, app.storage, batch_files=2)
    order = recorded(runner)
    while runner.run_once():
        pass
    assert order == [["note0.md"], ["bob.md"], ["note1.md"], ["note2.md"]]
    assert app.jobs.get(bob.id).state == "indexed"
    done = [app.jobs.get(job.id) for job in alices]
    assert [(job.state, job.attempts) for job in done] == [("indexed", 1)] * 3  # none charged
