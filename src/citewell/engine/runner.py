"""The worker that runs queued ingest jobs: it claims up to ``batch_files`` jobs at once (more
while files make few chunks each: claim_size) and ingests them in one pass, so the embedder
runs full batches across many small files.

A job's steps are recorded as the ingestor reports them (parsing → embedding → indexed).
A failure the service may get over (an embedding server down: UpstreamError) is retried with
exponential backoff; a file that cannot be read fails at once. Uploads stay staged until
their job succeeds, so a failed job can be retried without uploading again.

Several runners (threads, processes, hosts) may share one queue. A runner renews the leases
of the jobs it holds from a heartbeat thread, hands them back when it stops mid-batch, and
queues again the jobs of runners whose leases passed (killed ones).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import defaultdict
from concurrent.futures import Future
from dataclasses import dataclass, field

from citewell.catalog.storage import FileStorage
from citewell.embedders.base import background
from citewell.engine.claim_size import ClaimSize
from citewell.engine.job_handlers import (
    JobContext,
    PreparingHandler,
    Rechunks,
    Reembedder,
    build_handlers,
)
from citewell.errors import CitewellError, UpstreamError
from citewell.ingest.connector_runs import ConnectorRuns
from citewell.ingest.folder_watch import FolderWatcher
from citewell.ingest.ingestor import Ingestor
from citewell.ingest.run import Preloaded
from citewell.jobs.staged import stale_staged
from citewell.jobs.store import Job, JobStore
from citewell.metrics import count_jobs
from citewell.tracing import job_span

logger = logging.getLogger(__name__)


OPTIMIZE_EVERY = 8  # batches between chunk store compactions while the queue stays busy
STAGED_SWEEP_SECONDS = 300.0  # how often finished jobs' leftover uploads are looked for
AHEAD_WAIT_SECONDS = 5.0  # how long stopping waits for the next claim being prepared


@dataclass
class Claim:
    """Jobs claimed together, with the groups (operation, KB) prepared ahead of their run."""

    jobs: list[Job]
    prepared: dict[tuple[str, str], Preloaded | None] = field(default_factory=dict)
    ahead: bool = False  # taken while the claim before it ran

    @property
    def token(self) -> str:
        return self.jobs[0].claim if self.jobs else ""

    def groups(self) -> list[tuple[tuple[str, str], list[Job]]]:
        """Its jobs by (operation, KB), the fewest files first: a user's single upload
        claimed beside another user's hundreds is not kept waiting behind all of them (the
        claim took users in turn)."""
        groups: dict[tuple[str, str], list[Job]] = defaultdict(list)
        for job in self.jobs:
            groups[job.operation, job.kb_id].append(job)
        return sorted(groups.items(), key=lambda g: len(g[1]))


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
        max_batch_files: int | None = None,
    ) -> None:
        """``max_batch_files``: how far a claim grows past ``batch_files`` while the files
        ingested make few chunks each (ClaimSize); None: never."""
        self.jobs = jobs
        self.spaces = spaces
        self.rechunker = rechunker
        self.ingestor = ingestor
        self.storage = storage
        self.batch_files = batch_files
        self.claim_size = ClaimSize(batch_files, max_batch_files)
        self.retry_seconds = retry_seconds
        self.poll_seconds = poll_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._heartbeat: threading.Thread | None = None
        # Batches run since the store was last compacted; 1 at start, so the first idle tick
        # takes in rows a write stopped before its upkeep (a killed server) left outside the
        # indexes: nothing else would before the next write.
        self._since_optimize = 1
        self._training = False  # the last upkeep left a vector training running
        # The claims held (the running one, and the next one while it is taken ahead): their
        # job ids by claim token; replaced whole, never changed in place.
        self._held: dict[str, tuple[str, ...]] = {}
        self._holding = threading.Lock()
        self._ahead: Future[Claim] | None = None  # the next claim, being taken and prepared
        self._ran_alone = False  # the last claim taken now was a job to run alone
        self._swept = float("-inf")  # when expired leases were last looked for
        self._swept_staged = time.monotonic()  # start() clears them once
        self.connectors = connectors
        self._watcher: FolderWatcher | None = None
        context = JobContext(
            jobs, storage, ingestor, self._failed, spaces, rechunker, connectors, self.claim_size
        )
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
        if self._ahead is not None:  # its claim is held from the start: handed back below
            with contextlib.suppress(Exception):  # its failure, or the wait's time-out
                self._ahead.result(timeout=AHEAD_WAIT_SECONDS)
        handed_back = sum(self.jobs.release(ids, claim) for claim, ids in self._held.items())
        if handed_back:
            logger.info("handed %d unfinished jobs back to the queue", handed_back)

    def _renew_leases(self) -> None:
        """Keep the held jobs' leases from passing while this process is alive."""
        while not self._stop.wait(self.jobs.lease_seconds / 3):
            for claim, held in self._held.items():
                self._renew(claim, held)

    def _renew(self, claim: str, held: tuple[str, ...]) -> None:
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
                worked = self.run_once(ahead=True)
            except Exception:  # the loop must survive anything one batch does
                logger.exception("job batch failed")
                worked = False
            if not worked:
                self._wake.wait(self.poll_seconds)
                self._wake.clear()

    def run_once(self, ahead: bool = False) -> bool:
        """Claim and run one batch; False when nothing was due. The chunk store is compacted
        every OPTIMIZE_EVERY batches and when the queue runs dry, not after every batch. A
        model switch whose re-embed jobs are all done is finished between batches.
        ``ahead`` (the runner's own loop): after a full claim the next one is taken and
        prepared (parsed, split, embedded) in another thread while this one writes."""
        if self.spaces is not None:
            self.spaces.refresh()
        self._sweep()
        if self.connectors is not None:
            self._queue_due_syncs(self.connectors)
        operations = tuple(name for name, handler in self.handlers.items() if handler.ready())
        claims = [self._next_claim(operations)]
        try:
            claims[:0] = self._newcomers(claims[-1], operations)
            if ahead and self._room_ahead(claims[-1], operations):
                self._ahead = self._take_ahead(operations)
            for taken in claims:
                self._run(taken)
        finally:  # a claim that failed midway is not renewed: its leases pass, it runs again
            for taken in claims:
                self._let_go(taken.token)
        claimed = [job for taken in claims for job in taken.jobs]
        self._upkeep(bool(claimed))
        if self.spaces is not None and not any(job.operation == "reembed" for job in claimed):
            self.spaces.finish()
            if not claimed:
                self.spaces.drop_retired()
        if self.rechunker is not None and not claimed:
            self.rechunker.retire_all()
        return bool(claimed)

    def _upkeep(self, claimed: bool) -> None:
        """Compact the store and fold new rows into its indexes every OPTIMIZE_EVERY
        batches and when the queue runs dry. A training of the vector index that this left
        running in the background commits an index of the rows up to its start; the rows
        written meanwhile are taken in by the first upkeep after it ends, which an idle
        tick runs (else they waited for the next upload, searched one by one)."""
        writer = self.ingestor.writer
        if self._training and writer.wait_for_training(0):
            self._training = False
            self._since_optimize = max(self._since_optimize, 1)
        if claimed:
            self._since_optimize += 1
        if self._since_optimize and (not claimed or self._since_optimize >= OPTIMIZE_EVERY):
            with self.ingestor.lock:
                writer.optimize()
            self._since_optimize = 0
            self._training = not writer.wait_for_training(0)

    def _next_claim(self, operations: tuple[str, ...]) -> Claim:
        """The claim taken ahead, if any (ready or nearly), else one taken now."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            try:
                return ahead.result()
            except Exception:  # taking it failed: nothing is held by it; claim now
                logger.exception("taking the next batch ahead failed")
        return Claim(self._hold(self._claim_now(operations)))

    def _claim_now(self, operations: tuple[str, ...]) -> list[Job]:
        """Jobs to run alone (jobs/lost.py) take turns with the rest: after one, other jobs
        go first if any are due. A crash's hundred jobs, run one claim each, would otherwise
        hold back every other user's uploads until the last of them (decision 0041)."""
        if self._ran_alone:
            self._ran_alone = False
            shared = self.jobs.claim(self.claim_size.files(), operations, alone=False)
            if shared:
                return shared
        claimed = self.jobs.claim(self.claim_size.files(), operations)
        self._ran_alone = bool(claimed) and claimed[0].run_alone
        return claimed

    def _newcomers(self, claim: Claim, operations: tuple[str, ...]) -> list[Claim]:
        """Before a claim taken ahead, the jobs of users it has none of, queued meanwhile:
        taking the claim early must not make a newcomer's upload wait for two claims."""
        if not claim.ahead:
            return []
        users = {job.added_by for job in claim.jobs}
        newcomers = self.jobs.claim(
            self.batch_files, operations, other_than=sorted(users), alone=False
        )
        return [Claim(self._hold(newcomers))] if newcomers else []

    def _run(self, claim: Claim) -> None:
        for (operation, kb_id), group in claim.groups():
            count_jobs(operation, "taken", len(group))
            with job_span(operation, len(group)), background():  # a trace of its own
                self._run_group(claim, operation, kb_id, group)

    def _room_ahead(self, claim: Claim, operations: tuple[str, ...]) -> bool:
        """Whether the next claim is taken while this one runs: after a full claim, unless
        a job must run alone (jobs/lost.py) or waits to (the claim taken ahead would keep
        it waiting as long as the queue stays full)."""
        full = len(claim.jobs) >= self.batch_files
        return full and not claim.jobs[0].run_alone and not self.jobs.alone_due(operations)

    def _take_ahead(self, operations: tuple[str, ...]) -> Future[Claim]:
        """The next claim, taken and prepared in a daemon thread: a long preparation never
        holds up the process's exit, and stopping hands its claim back without waiting."""
        taken: Future[Claim] = Future()

        def take() -> None:
            try:
                taken.set_result(self._claim_prepared(operations))
            except Exception as exc:  # noqa: BLE001 - the runner claims anew instead
                taken.set_exception(exc)

        threading.Thread(target=take, name="citewell-jobs-ahead", daemon=True).start()
        return taken

    def _claim_prepared(self, operations: tuple[str, ...]) -> Claim:
        if self._stop.is_set():
            return Claim([], ahead=True)
        claimed = self.jobs.claim(self.claim_size.files(), operations, alone=False)
        claim = Claim(self._hold(claimed), ahead=True)
        for (operation, kb_id), group in claim.groups():
            handler = self.handlers.get(operation)
            if isinstance(handler, PreparingHandler) and not self._stop.is_set():
                try:
                    claim.prepared[operation, kb_id] = handler.prepare(kb_id, group)
                except Exception:  # its run prepares it again, and meets the error there
                    logger.exception("preparing the next batch ahead failed")
        return claim

    def _run_group(self, claim: Claim, operation: str, kb_id: str, group: list[Job]) -> None:
        handler = self.handlers[operation]
        if not handler.ready():  # claimed ahead, before a model switch began or ended
            self.jobs.release([job.id for job in group], claim.token)
            return
        prepared = claim.prepared.get((operation, kb_id))
        if prepared is not None and isinstance(handler, PreparingHandler):
            handler.run(kb_id, group, prepared)
        else:
            handler.run(kb_id, group)

    def _hold(self, claimed: list[Job]) -> list[Job]:
        if claimed:
            with self._holding:
                self._held = {**self._held, claimed[0].claim: tuple(j.id for j in claimed)}
        return claimed

    def _let_go(self, token: str) -> None:
        with self._holding:
            self._held = {claim: ids for claim, ids in self._held.items() if claim != token}

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
