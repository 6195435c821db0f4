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

from citewell.catalog.storage import FileStorage
from citewell.embedders.base import background
from citewell.engine.job_handlers import JobContext, Rechunks, Reembedder, build_handlers
from citewell.errors import CitewellError, UpstreamError
from citewell.ingest.connector_runs import ConnectorRuns
from citewell.ingest.folder_watch import FolderWatcher
from citewell.ingest.ingestor import Ingestor
from citewell.jobs.staged import stale_staged
from citewell.jobs.store import Job, JobStore
from citewell.metrics import count_jobs
from citewell.tracing import job_span

logger = logging.getLogger(__name__)


OPTIMIZE_EVERY = 8  # batches between chunk store compactions while the queue stays busy
STAGED_SWEEP_SECONDS = 300.0  # how often finished jobs' leftover uploads are looked for


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
        connectors: ConnectorRuns | None = None,
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
        self._swept_staged = time.monotonic()  # start() clears them once
        self.connectors = connectors
        self._watcher: FolderWatcher | None = None
        context = JobContext(jobs, storage, ingestor, self._failed, spaces, rechunker, connectors)
        self.handlers = build_handlers(context)

    def start(self) -> None:
        """Put jobs whose workers are gone back in the queue, then start working."""
        self._sweep()
        self._clear_staged()
        self._thread = threading.Thread(target=self._loop, name="citewell-jobs", daemon=True)
        self._heartbeat = threading.Thread(
            target=self._renew_leases, name="citewell-job-leases", daemon=True
        )
        self._thread.start()
        self._heartbeat.start()
        if self.connectors is not None and self.connectors.watch:
            self._watcher = FolderWatcher(self.connectors, self.wake)
            self._watcher.start()

    def stop(self, drain_seconds: float = 60.0) -> None:
        """Finish the running batch (up to ``drain_seconds``), then hand back what is left."""
        self._stop.set()
        self._wake.set()
        if self._watcher is not None:
            self._watcher.stop()
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
        # A worker stopped between a job's success and its upload's removal leaves the
        # upload behind: cleared when its jobs are taken over, and every few minutes.
        if resumed or now - self._swept_staged >= STAGED_SWEEP_SECONDS:
            self._swept_staged = now
            self._clear_staged()

    def _clear_staged(self) -> None:
        for job_id in stale_staged(self.jobs, self.storage):
            self.storage.unstage(job_id)

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
        self._sweep()
        if self.connectors is not None:
            self._queue_due_syncs(self.connectors)
        operations = tuple(name for name, handler in self.handlers.items() if handler.ready())
        claimed = self.jobs.claim(self.batch_files, operations)
        self._held = (claimed[0].claim if claimed else "", tuple(job.id for job in claimed))
        groups: dict[tuple[str, str], list[Job]] = defaultdict(list)
        for job in claimed:
            groups[job.operation, job.kb_id].append(job)
        # The fewest files first: a user's single upload claimed beside another user's
        # hundreds is not kept waiting behind all of them (the claim took users in turn).
        for (operation, kb_id), group in sorted(groups.items(), key=lambda g: len(g[1])):
            count_jobs(operation, "taken", len(group))
            with job_span(operation, len(group)), background():  # a trace of its own
                self.handlers[operation].run(kb_id, group)
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

    @staticmethod
    def _queue_due_syncs(connectors: ConnectorRuns) -> None:
        try:
            connectors.queue_due()
        except CitewellError as exc:  # e.g. the database hiccuped: the next loop tries again
            logger.warning("queueing due connector syncs failed: %s", exc.message)

    def _failed(self, job: Job, error: CitewellError) -> None:
        transient = isinstance(error, UpstreamError)
        delay = self.retry_seconds * 2 ** max(0, job.attempts - 1) if transient else None
        retried = self.jobs.fail(job.id, error.message, error.code, delay, job.claim)
        count_jobs(job.operation, "retried" if retried else "failed")
        if retried:
            logger.warning("job %s (%s) will be retried: %s", job.id, job.name, error.message)
            if delay is not None:
                timer = threading.Timer(delay, self.wake)
                timer.daemon = True
                timer.start()
