"""The worker that runs queued ingest jobs: it claims up to ``batch_files`` jobs at once and
ingests them in one pass, so the embedder runs full batches across many small files.

A job's steps are recorded as the ingestor reports them (parsing → embedding → indexed).
A failure the service may get over (an embedding server down: UpstreamError) is retried with
exponential backoff; a file that cannot be read fails at once. Uploads stay staged until
their job succeeds, so a failed job can be retried without uploading again.

Several runners (threads, processes, hosts) may share one queue. A runner renews the leases
of the jobs it holds from a heartbeat thread, hands them back when it stops mid-batch, and
queues again the jobs of runners whose leases passed (killed ones).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Protocol

from citewell.catalog.storage import FileStorage
from citewell.errors import CitewellError, UpstreamError
from citewell.ingest.ingestor import Ingestor
from citewell.ingest.types import ItemEvent
from citewell.jobs.staged import stale_staged
from citewell.jobs.store import Job, JobStore
from citewell.sources import SourceItem

logger = logging.getLogger(__name__)


OPTIMIZE_EVERY = 8  # batches between chunk store compactions while the queue stays busy
WRITE_EVERY = 0.5  # seconds between writes of a running batch's job steps


class Reembedder(Protocol):
    """The model switch, as the runner drives it (operations.spaces.EmbeddingSpaces)."""

    def refresh(self) -> None: ...

    @property
    def switching(self) -> bool: ...

    def reembed(self, jobs: Sequence[Job]) -> None: ...

    def finish(self) -> bool: ...

    def drop_retired(self) -> None: ...


class Rechunks(Protocol):
    """Re-chunking knowledge bases, as the runner drives it (ingest.chunk_sets)."""

    def rechunk(self, kb_id: str, group: Sequence[Job]) -> None: ...

    def retire_all(self) -> None: ...


class UploadLost(CitewellError):
    status = 410
    code = "lost"
    message_text = "Its upload is gone; upload the file again."


class JobCancelled(CitewellError):
    status = 409
    code = "job_cancelled"


class JobRunner:
    def __init__(
        self,
        jobs: JobStore,
        ingestor: Ingestor,
        storage: FileStorage,
        batch_files: int = 64,
        retry_seconds: float = 2.0,
        poll_seconds: float = 1.0,
        spaces: Reembedder | None = None,
        rechunker: Rechunks | None = None,
    ) -> None:
        self.jobs = jobs
        self.spaces = spaces
        self.rechunker = rechunker
        self.ingestor = ingestor
        self.storage = storage
        self.batch_files = batch_files
        self.retry_seconds = retry_seconds
        self.poll_seconds = poll_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._heartbeat: threading.Thread | None = None
        self._since_optimize = 0  # batches run since the store was last compacted
        # The running batch: its claim token and job ids (replaced whole, never changed).
        self._held: tuple[str, tuple[str, ...]] = ("", ())
        self._swept = float("-inf")  # when expired leases were last looked for

    def start(self) -> None:
        """Put jobs whose workers are gone back in the queue, then start working."""
        self._sweep()
        for job_id in stale_staged(self.jobs, self.storage):
            self.storage.unstage(job_id)
        self._thread = threading.Thread(target=self._loop, name="citewell-jobs", daemon=True)
        self._heartbeat = threading.Thread(
            target=self._renew_leases, name="citewell-job-leases", daemon=True
        )
        self._thread.start()
        self._heartbeat.start()

    def stop(self, drain_seconds: float = 60.0) -> None:
        """Finish the running batch (up to ``drain_seconds``), then hand back what is left."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=drain_seconds)
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
        claim, held = self._held
        handed_back = self.jobs.release(held, claim)
        if handed_back:
            logger.info("handed %d unfinished jobs back to the queue", handed_back)

    def _renew_leases(self) -> None:
        """Keep the held jobs' leases from passing while this process is alive."""
        while not self._stop.wait(self.jobs.lease_seconds / 3):
            claim, held = self._held
            try:
                kept = self.jobs.renew(held, claim)
                # Fewer kept is mostly jobs of the batch that already ended; only jobs that
                # another claim runs now were lost.
                lost = self.jobs.taken_over(held, claim) if kept < len(held) else 0
                if lost:
                    logger.warning(
                        "%d jobs of this worker's batch are no longer its own (its lease "
                        "passed; another worker runs them); their results will not be marked",
                        lost,
                    )
            except Exception:  # a database hiccup: the next beat tries again
                logger.exception("renewing job leases failed")

    def _sweep(self) -> None:
        """Queue again the jobs of workers whose leases passed (at most every half lease)."""
        now = time.monotonic()
        if now - self._swept < self.jobs.lease_seconds / 2:
            return
        self._swept = now
        resumed = self.jobs.requeue_expired()
        if resumed:
            logger.info("queued again %d jobs whose worker stopped", resumed)

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                worked = self.run_once()
            except Exception:  # the loop must survive anything one batch does
                logger.exception("job batch failed")
                worked = False
            if not worked:
                self._wake.wait(self.poll_seconds)
                self._wake.clear()

    def run_once(self) -> bool:
        """Claim and run one batch; False when nothing was due. The chunk store is compacted
        every OPTIMIZE_EVERY batches and when the queue runs dry, not after every batch. A
        model switch whose re-embed jobs are all done is finished between batches."""
        if self.spaces is not None:
            self.spaces.refresh()
        # Re-embed jobs only where this process builds the new space (not a CLI's worker).
        switching = self.spaces is not None and self.spaces.switching
        self._sweep()
        # A re-chunk waits for a model switch to end (its sets would miss the new space).
        operations: tuple[str, ...] = ("ingest", "reembed") if switching else ("ingest", "rechunk")
        if self.rechunker is None:
            operations = ("ingest", "reembed") if switching else ("ingest",)
        claimed = self.jobs.claim(self.batch_files, operations)
        self._held = (claimed[0].claim if claimed else "", tuple(job.id for job in claimed))
        groups: dict[tuple[str, str], list[Job]] = defaultdict(list)
        for job in claimed:
            groups[job.operation, job.kb_id].append(job)
        for (operation, kb_id), group in groups.items():
            if operation == "reembed":
                self._reembed(group)
            elif operation == "rechunk":
                assert self.rechunker is not None
                self.rechunker.rechunk(kb_id, group)
            else:
                self._run_group(kb_id, group)
        self._held = ("", ())
        if claimed:
            self._since_optimize += 1
        if self._since_optimize and (not claimed or self._since_optimize >= OPTIMIZE_EVERY):
            with self.ingestor.lock:
                self.ingestor.writer.optimize()
            self._since_optimize = 0
        if self.spaces is not None and not any(op == "reembed" for op, _ in groups):
            self.spaces.finish()
            if not claimed:
                self.spaces.drop_retired()
        if self.rechunker is not None and not claimed:
            self.rechunker.retire_all()
        return bool(claimed)

    def _reembed(self, group: Sequence[Job]) -> None:
        assert self.spaces is not None
        try:
            self.spaces.reembed(group)
        except CitewellError as exc:  # e.g. the new model's server is down: retried later
            for job in group:
                self._failed(job, exc)

    def _run_group(self, kb_id: str, group: Sequence[Job]) -> None:
        if self.ingestor.catalog.find_kb(kb_id) is None:
            for job in group:
                self.jobs.fail(
                    job.id, "Its knowledge base was deleted.", "kb_deleted", None, job.claim
                )
                self.storage.unstage(job.id)
            return
        by_key: dict[str, list[Job]] = defaultdict(list)
        items = []
        for job in group:
            if not self.storage.is_staged(job.id):
                self.jobs.fail(job.id, UploadLost.message_text, UploadLost.code, None, job.claim)
                continue
            by_key[job.key].append(job)
            items.append(
                SourceItem(
                    key=job.key, name=job.name, read=self._staged(job.id), added_by=job.added_by
                )
            )
        updates = JobUpdates(self.jobs, self.storage, group[0].claim if group else None)
        try:
            self.ingestor.ingest(
                items, kb_id, observer=self._observer(by_key, updates), optimize=False
            )
        except CitewellError as exc:  # a store or embedding pass failed: the unfinished retry
            updates.write()
            for job in group:
                if job.id not in updates.finished:
                    self._failed(job, exc)
        updates.write()

    def _staged(self, job_id: str) -> Callable[[], bytes]:
        """Reads the upload when its file's turn comes, not the whole batch at once."""

        def read() -> bytes:
            data = self.storage.staged(job_id)
            if data is None:
                raise UploadLost(UploadLost.message_text)
            return data

        return read

    def _observer(
        self, by_key: dict[str, list[Job]], updates: JobUpdates
    ) -> Callable[[ItemEvent], None]:
        def observe(event: ItemEvent) -> None:
            for job in by_key.get(event.key, []):
                if event.state == "parsing" and self.jobs.get(job.id).state == "cancelled":
                    updates.finished.add(job.id)
                    self.storage.unstage(job.id)
                    raise JobCancelled(f"job {job.id} was cancelled")
                if event.state == "embedding":
                    updates.embedding(job.id)
                elif event.state == "indexed":
                    updates.indexed(job.id, event.file_id)
                elif event.state == "failed" and not isinstance(event.error, JobCancelled):
                    updates.write()
                    updates.finished.add(job.id)
                    assert event.error is not None
                    self._failed(job, event.error)

        return observe

    def _failed(self, job: Job, error: CitewellError) -> None:
        transient = isinstance(error, UpstreamError)
        delay = self.retry_seconds * 2 ** max(0, job.attempts - 1) if transient else None
        if self.jobs.fail(job.id, error.message, error.code, delay, job.claim):
            logger.warning("job %s (%s) will be retried: %s", job.id, job.name, error.message)
            if delay is not None:
                timer = threading.Timer(delay, self.wake)
                timer.daemon = True
                timer.start()


class JobUpdates:
    """A batch's job steps, written to the database together at most every WRITE_EVERY
    seconds instead of one commit per file and step. An upload is removed only once its
    job's success is written, so a crash in between leaves a job that runs again."""

    def __init__(self, jobs: JobStore, storage: FileStorage, claim: str | None = None) -> None:
        self.jobs, self.storage, self.claim = jobs, storage, claim
        self.finished: set[str] = set()
        self._embedding: list[str] = []
        self._indexed: list[tuple[str, str]] = []
        self._written = time.monotonic()

    def embedding(self, job_id: str) -> None:
        self._embedding.append(job_id)
        self._maybe_write()

    def indexed(self, job_id: str, file_id: str) -> None:
        self.finished.add(job_id)
        self._indexed.append((job_id, file_id))
        self._maybe_write()

    def _maybe_write(self) -> None:
        if time.monotonic() - self._written >= WRITE_EVERY:
            self.write()

    def write(self) -> None:
        self.jobs.advance_many(self._embedding, "embedding", self.claim)
        self.jobs.succeed_many(self._indexed, self.claim)
        for job_id, _ in self._indexed:
            self.storage.unstage(job_id)
        self._embedding, self._indexed = [], []
        self._written = time.monotonic()
