"""The ingest job queue, in process: a real SQLite job table, real LanceDB, the runner's own
steps driven one batch at a time (run_once) so each state can be looked at."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.embedders import OpenAIEmbedder
from citewell.engine.runner import JobRunner
from tests.fake_servers import FakeService, serve

pytestmark = pytest.mark.e2e

DUCKS = ("ducks.md", b"# Ducks\n\nMallards eat duckweed and snails in the marsh.")
GEESE = ("geese.md", b"# Geese\n\nGreylag geese graze on grass near the river.")


def runner(app: Citewell, retry_seconds: float = 0.0) -> JobRunner:
    return JobRunner(
        app.jobs, app.ingestor, app.storage, batch_files=64, retry_seconds=retry_seconds
    )


def test_queued_files_are_indexed_in_one_batch(app):
    app.create_kb("birds")
    jobs = app.enqueue_uploads("birds", [DUCKS, GEESE])
    assert {j.state for j in jobs} == {"queued"} and len({j.batch_id for j in jobs}) == 1
    assert runner(app).run_once() is True
    done = app.jobs.find(batch_id=jobs[0].batch_id)
    assert [j.state for j in done] == ["indexed", "indexed"]
    assert all(j.file_id and j.attempts == 1 for j in done)
    assert app.storage.staged(jobs[0].id) is None  # the staged upload is gone once indexed
    hits = app.search("What do mallards eat?", ["birds"], k=1)
    assert hits[0].chunk.file_id == done[0].file_id
    assert runner(app).run_once() is False  # nothing left


def test_cancelled_jobs_are_not_run(app):
    app.create_kb("birds")
    ducks, geese = app.enqueue_uploads("birds", [DUCKS, GEESE])
    assert app.jobs.cancel(geese.id).state == "cancelled"
    runner(app).run_once()
    assert app.jobs.get(ducks.id).state == "indexed"
    assert app.jobs.get(geese.id).state == "cancelled"
    assert [f.name for f in app.files("birds")] == ["ducks.md"]
    batch = app.jobs.cancel_batch(ducks.batch_id)  # finished jobs stay as they are
    assert [j.state for j in batch] == ["indexed", "cancelled"]


def test_a_job_cancelled_while_its_batch_runs_stops_before_parsing(app):
    app.create_kb("birds")
    ducks, geese = app.enqueue_uploads("birds", [DUCKS, GEESE])
    work = runner(app)
    claimed = app.jobs.claim(64)  # the worker has taken both...
    app.jobs.cancel(geese.id)  # ...when the user cancels the second
    work.handlers["ingest"].run(claimed[0].kb_id, claimed)
    assert app.jobs.get(ducks.id).state == "indexed"
    assert app.jobs.get(geese.id).state == "cancelled"
    assert app.storage.staged(geese.id) is None


def test_an_unreadable_file_fails_at_once_and_can_be_retried(app):
    app.create_kb("birds")
    (broken,) = app.enqueue_uploads("birds", [("empty.txt", b"")])
    runner(app).run_once()
    failed = app.jobs.get(broken.id)
    assert (failed.state, failed.attempts, failed.error_code) == ("failed", 1, "parse_failed")
    assert "empty" in failed.last_error
    assert app.storage.staged(broken.id) == b""  # kept, so retrying needs no new upload
    again = app.jobs.retry(broken.id)
    assert again.state == "queued" and again.max_attempts > failed.attempts
    with pytest.raises(Exception, match="only failed or cancelled"):
        app.jobs.retry(broken.id)


def test_broken_files_in_a_claim_fail_alone_while_the_rest_are_indexed(app):
    from tests.hostile import truncated_pdf

    app.create_kb("birds")
    broken = [("empty.txt", b""), ("truncated.pdf", truncated_pdf())]
    notes = [(f"note{i}.md", f"# Note {i}\n\nA coot number {i}.".encode()) for i in range(6)]
    jobs = app.enqueue_uploads("birds", [*notes[:3], *broken, *notes[3:]])
    assert runner(app).run_once() is True  # one claim: its small files read in batches
    states = {j.name: (j.state, j.error_code) for j in app.jobs.find(batch_id=jobs[0].batch_id)}
    assert states == {
        **{name: ("indexed", "") for name, _ in notes},
        **{name: ("failed", "parse_failed") for name, _ in broken},
    }
    assert len(app.files("birds")) == len(notes)


def test_a_service_failure_is_retried_with_backoff(tmp_path):
    """The embedding server (a wire-faithful fake) fails once; the job goes back to the queue,
    not before its backoff, and succeeds on its second attempt."""
    service = FakeService()
    with serve(service) as url:
        embedder = OpenAIEmbedder(url + "/v1", "m", retries=0)
        app = Citewell.from_settings(Settings.load(data_dir=tmp_path / "data"), embedder=embedder)
        app.create_kb("birds")
        (job,) = app.enqueue_uploads("birds", [DUCKS])
        service.fail_next = [503]
        runner(app, retry_seconds=0.5).run_once()
        waiting = app.jobs.get(job.id)
        assert (waiting.state, waiting.attempts) == ("queued", 1)
        assert waiting.error_code == "embedding_failed"
        assert runner(app).run_once() is False  # not due yet: backing off
        time.sleep(0.6)
        runner(app).run_once()
        assert app.jobs.get(job.id).state == "indexed"
        assert app.jobs.get(job.id).attempts == 2
        app.close()


def _wait_until_indexed(app, job_id: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while app.jobs.get(job_id).state != "indexed" and time.monotonic() < deadline:
        time.sleep(0.05)


def _held_by(app, job_id: str, holder: str) -> None:
    from sqlalchemy import update

    from citewell.db.models import JobRow

    with app.catalog.engine.begin() as db:
        db.execute(update(JobRow).where(JobRow.id == job_id).values(holder=holder))


def test_jobs_a_killed_worker_on_this_host_left_running_resume_at_once(app):
    import socket
    import subprocess

    app.create_kb("birds")
    (job,) = app.enqueue_uploads("birds", [DUCKS])
    app.jobs.claim(64)  # taken by a worker that then died: its lease still runs 30 s
    dead = subprocess.Popen(["true"])
    dead.wait()
    _held_by(app, job.id, f"{socket.gethostname()}/{dead.pid}/")
    assert app.jobs.get(job.id).state == "parsing"
    app.start_workers()  # a restart: the dead holder's jobs go back to the queue and run
    try:
        _wait_until_indexed(app, job.id)
    finally:
        app.close()
    assert app.jobs.get(job.id).state == "indexed"


def test_a_worker_taking_over_clears_the_uploads_a_killed_worker_left_behind(app):
    import socket
    import subprocess

    app.create_kb("birds")
    finished, held = app.enqueue_uploads("birds", [DUCKS, GEESE])
    claimed = app.jobs.claim(64)  # a worker took both, then died after the first succeeded
    app.jobs.succeed(finished.id, "f1", claimed[0].claim)
    dead = subprocess.Popen(["true"])
    dead.wait()
    _held_by(app, held.id, f"{socket.gethostname()}/{dead.pid}/")
    assert app.storage.staged(finished.id) is not None  # it died before removing the upload
    running = runner(app)  # a worker already up, not one restarting
    assert running.run_once()
    assert app.jobs.get(held.id).state == "indexed"
    assert app.storage.staged(finished.id) is None and app.storage.staged(held.id) is None
    assert app.check().orphan_staged == []


def test_a_worker_starting_takes_in_rows_a_killed_one_left_outside_the_indexes(
    tmp_path, onnx_embedder
):
    settings = Settings.load(data_dir=tmp_path / "data", vector_index_min_rows=1)
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    try:
        app.create_kb("birds")
        app.enqueue_uploads("birds", [DUCKS, GEESE])
        busy = runner(app)
        busy._since_optimize = 0  # as a worker long up, its upkeep 8 claims away
        assert busy.run_once()  # then killed before that upkeep
        behind = app.check(recall_samples=0).index
        assert behind is not None and behind.vector_index == "none" and behind.rows_behind == 2
        assert runner(app).run_once() is False  # a new worker, nothing queued: its first tick
        healed = app.check(recall_samples=0)
        assert healed.index is not None and healed.index.vector_index == "IvfSq"
        assert healed.problems == 0
    finally:
        app.close()


@pytest.fixture
def indexed_app(tmp_path, onnx_embedder):
    """An app whose table has a vector index from its first row, and whose upkeep takes any
    row left outside it into a delta (by default it waits for 4,096)."""
    settings = Settings.load(data_dir=tmp_path / "data", vector_index_min_rows=1)
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    upkeep = app.store._upkeep
    upkeep.policy = replace(upkeep.policy, vector_delta_rows=1)
    yield app
    app.close()


def held_training(app: Citewell, monkeypatch) -> threading.Event:
    """The next training of the vector index waits until the returned event is set."""
    upkeep = app.store._upkeep
    gate, build = threading.Event(), upkeep._build_vectors

    def held(*args, **kwargs):
        assert gate.wait(60)
        build(*args, **kwargs)

    monkeypatch.setattr(upkeep, "_build_vectors", held)
    return gate


HERONS = ("herons.md", b"# Herons\n\nGrey herons stalk fish.")


def test_rows_written_while_the_vector_index_trained_are_taken_in_once_it_ends(
    indexed_app, monkeypatch
):
    app = indexed_app
    app.create_kb("birds")
    app.enqueue_uploads("birds", [DUCKS])
    work = runner(app)
    assert work.run_once() and not work.run_once()  # idle: the first index, trained here
    gate = held_training(app, monkeypatch)
    app.enqueue_uploads("birds", [GEESE])
    assert work.run_once() and not work.run_once()  # twice the rows: trained anew, held
    assert not app.wait_for_index_training(0)
    app.enqueue_uploads("birds", [HERONS])
    assert work.run_once()  # written while the training runs
    assert not work.run_once()  # idle: an upkeep, but the vector index is being replaced
    gate.set()
    assert app.store.wait_for_training(60)
    behind = app.check(recall_samples=0).index
    assert behind is not None and behind.rows_behind == 1  # the heron's chunk
    assert not work.run_once()  # the first idle tick since the training ended
    after = app.check(recall_samples=0).index
    assert after is not None and after.rows_behind == 0
    assert after.segments["vector"] == 2  # the new index, and a delta with the heron


def test_a_command_waiting_for_a_training_takes_in_the_rows_written_meanwhile(
    indexed_app, monkeypatch
):
    app = indexed_app
    app.ingest_texts([(DUCKS[0], DUCKS[1].decode())], "birds")  # the first index
    gate = held_training(app, monkeypatch)
    app.ingest_texts([(GEESE[0], GEESE[1].decode())], "birds")  # doubled: trained anew
    app.ingest_texts([(HERONS[0], HERONS[1].decode())], "birds")  # written meanwhile
    assert not app.wait_for_index_training(0)  # as `citewell ingest` asks before exiting
    gate.set()
    assert app.wait_for_index_training(60)
    after = app.check(recall_samples=0).index
    assert after is not None and after.rows_behind == 0
    assert after.segments["vector"] == 2  # the new index, and a delta with the heron


def test_jobs_of_a_worker_on_another_host_resume_when_its_lease_passes(tmp_path, onnx_embedder):
    settings = Settings.load(data_dir=tmp_path / "data", job_lease_seconds=3.0)
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    app.create_kb("birds")
    (job,) = app.enqueue_uploads("birds", [DUCKS])
    app.jobs.claim(64)
    _held_by(app, job.id, "another-host/4242/99")  # no way to see that process from here
    app.start_workers()
    try:
        time.sleep(1.0)
        assert app.jobs.get(job.id).state == "parsing"  # its lease still runs
        _wait_until_indexed(app, job.id)
    finally:
        app.close()
    assert app.jobs.get(job.id).state == "indexed"


def test_citewell_worker_runs_queued_jobs_in_its_own_process(tmp_path):
    """Jobs queued by one process, run by `citewell worker` in another, which stops on SIGTERM."""
    import signal
    import subprocess
    import sys

    data = tmp_path / "data"
    queueing = Citewell.from_settings(Settings.load(data_dir=data, extract_isolated=False))
    queueing.create_kb("birds")
    jobs = queueing.enqueue_uploads("birds", [DUCKS, GEESE])
    worker = subprocess.Popen(
        [sys.executable, "-m", "citewell", "--data-dir", str(data), "worker"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while any(queueing.jobs.get(j.id).state != "indexed" for j in jobs):
            assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
            assert time.monotonic() < deadline, [queueing.jobs.get(j.id) for j in jobs]
            time.sleep(0.2)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    assert worker.returncode == 0
    assert len(queueing.files("birds")) == 2


def test_deleting_a_kb_cancels_its_queued_jobs(app):
    app.create_kb("birds")
    (job,) = app.enqueue_uploads("birds", [DUCKS])
    app.delete_kb("birds")
    assert app.jobs.get(job.id).state == "cancelled"
    assert runner(app).run_once() is False
    assert app.catalog.find_kb(job.kb_id) is None  # not re-created by the worker


def test_a_claimed_job_whose_kb_is_gone_fails_without_recreating_it(app):
    app.create_kb("birds")
    (job,) = app.enqueue_uploads("birds", [DUCKS])
    claimed = app.jobs.claim(64)
    app.catalog.delete_kb(job.kb_id)  # gone between claim and run
    runner(app).handlers["ingest"].run(job.kb_id, claimed)
    assert app.jobs.get(job.id).error_code == "kb_deleted"
    assert app.catalog.find_kb(job.kb_id) is None and app.list_kbs() == []


def test_claims_grow_while_the_files_make_few_chunks(app):
    app.create_kb("notes")
    files = [
        (f"note{n}.md", f"Note {n}: the heron waits by reed bed {n}.".encode()) for n in range(40)
    ]
    jobs = app.enqueue_uploads("notes", files)
    work = JobRunner(app.jobs, app.ingestor, app.storage, batch_files=4, max_batch_files=16)

    def indexed() -> int:
        return sum(j.state == "indexed" for j in app.jobs.find(batch_id=jobs[0].batch_id))

    assert work.run_once() is True
    assert indexed() == 4  # nothing ingested yet to size the claim by
    assert work.run_once() is True
    assert indexed() == 4 + 16  # a chunk a file: as many as the maximum allows
    assert work.claim_size.files() == 16
