"""Job handlers: what the runner does with a claimed job, by its ``operation``.

One registry (the entry point group ``citewell.job_handlers``): an operation name → a
factory given the runner's JobContext, returning a JobHandler (or None where that operation
cannot run in this process). The runner claims only the operations whose handlers are
``ready()``, and hands each handler the jobs of one knowledge base at a time.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from citewell.catalog.storage import FileStorage
from citewell.engine.claim_size import ClaimSize
from citewell.errors import CitewellError, ConnectorNotFound
from citewell.ingest.connector_runs import ConnectorRuns
from citewell.ingest.ingestor import Ingestor
from citewell.ingest.preload import preload
from citewell.ingest.run import Preloaded
from citewell.ingest.types import ItemEvent
from citewell.jobs.store import Job, JobStore
from citewell.plugins import Registry
from citewell.sources import SourceItem

WRITE_EVERY = 0.5  # seconds between writes of a running batch's job steps
logger = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class JobContext:
    """What handlers get from the runner. ``fail`` records a failed job (retried later when
    the error is one the service may get over)."""

    jobs: JobStore
    storage: FileStorage
    ingestor: Ingestor
    fail: Callable[[Job, CitewellError], None]
    spaces: Reembedder | None = None
    rechunker: Rechunks | None = None
    connectors: ConnectorRuns | None = None
    claim_size: ClaimSize | None = None  # the runner's, told how many chunks files make


class JobHandler(Protocol):
    def ready(self) -> bool:
        """Whether jobs of this operation may be claimed now."""
        ...

    def run(self, kb_id: str, group: Sequence[Job]) -> None:
        """Run claimed jobs of one knowledge base; mark each done or failed."""
        ...


@runtime_checkable
class PreparingHandler(JobHandler, Protocol):
    """A handler whose groups can be prepared ahead (parsed, split, embedded) while the
    runner writes the claim before: ``run`` then only writes."""

    def prepare(self, kb_id: str, group: Sequence[Job]) -> Preloaded | None: ...

    def run(self, kb_id: str, group: Sequence[Job], prepared: Preloaded | None = None) -> None: ...


JOB_HANDLERS: Registry[Callable[[JobContext], JobHandler | None]] = Registry("job_handlers")


def build_handlers(context: JobContext) -> dict[str, JobHandler]:
    """Every registered operation that can run in this process, by name."""
    built = {name: factory(context) for name, factory in JOB_HANDLERS.items()}
    return {name: handler for name, handler in built.items() if handler is not None}


class UploadLost(CitewellError):
    status = 410
    code = "lost"
    message_text = "Its upload is gone; upload the file again."


class JobCancelled(CitewellError):
    status = 409
    code = "job_cancelled"


class IngestJobs:
    """``ingest``: staged uploads through the ingestor, at most job_slice_files files a
    hold of its lock, and fewer when another writer (a user's upload) asks for the lock:
    the hold ends after the files begun, and the waiter goes first (TurnLock). So an upload
    waits for a file or two, not the claim, and a worker alone writes the claim at once
    (one write per claim rather than per slice: the queue's rate is its writes' count). The
    claim's files are parsed and embedded first, without the lock (ingest.preload), so a
    hold only writes."""

    def __init__(self, context: JobContext) -> None:
        self.context = context

    def ready(self) -> bool:
        return True

    def prepare(self, kb_id: str, group: Sequence[Job]) -> Preloaded | None:
        """The group's files parsed, split and embedded (into the cache) ahead of its run;
        None when there is nothing to do ahead (run checks everything again)."""
        storage = self.context.storage
        items = [self._item(job) for job in group if storage.is_staged(job.id)]
        if len(items) < 2 or self.context.ingestor.catalog.find_kb(kb_id) is None:
            return None
        return preload(self.context.ingestor, items, kb_id)

    def run(self, kb_id: str, group: Sequence[Job], prepared: Preloaded | None = None) -> None:
        jobs, storage = self.context.jobs, self.context.storage
        if self.context.ingestor.catalog.find_kb(kb_id) is None:
            for job in group:
                jobs.fail(job.id, "Its knowledge base was deleted.", "kb_deleted", None, job.claim)
                storage.unstage(job.id)
            return
        by_key: dict[str, list[Job]] = defaultdict(list)
        items = []
        for job in group:
            if not storage.is_staged(job.id):
                jobs.fail(job.id, UploadLost.message_text, UploadLost.code, None, job.claim)
                continue
            by_key[job.key].append(job)
            items.append(self._item(job))
        updates = JobUpdates(jobs, storage, group[0].claim if group else None)
        self._ingest(items, kb_id, by_key, updates, group, prepared)

    def _ingest(
        self,
        items: list[SourceItem],
        kb_id: str,
        by_key: dict[str, list[Job]],
        updates: JobUpdates,
        group: Sequence[Job],
        prepared: Preloaded | None,
    ) -> None:
        observer = self._observer(by_key, updates)
        ingestor = self.context.ingestor
        size, sized = ingestor.settings.jobs.job_slice_files, self.context.claim_size
        if sized is not None:
            size = sized.slice_files(size, len(items))
        try:
            ready = prepared or (preload(ingestor, items, kb_id) if len(items) > 1 else None)
            left = items
            while left:
                report = ingestor.ingest(
                    left[:size], kb_id, observer=observer, optimize=False, preloaded=ready,
                    yield_to_waiters=True,
                )  # fmt: skip
                if sized is not None:
                    sized.observe(report.files_indexed, report.chunks_stored)
                left = left[min(size, len(left)) - report.files_left :]
        except CitewellError as exc:  # a store or embedding pass failed: the unfinished retry
            updates.write()
            for job in group:
                if job.id not in updates.finished:
                    self.context.fail(job, exc)
        updates.write()

    def _item(self, job: Job) -> SourceItem:
        return SourceItem(
            key=job.key, name=job.name, read=self._staged(job.id), added_by=job.added_by
        )

    def _staged(self, job_id: str) -> Callable[[], bytes]:
        """Reads the upload when its file's turn comes, not the whole batch at once."""

        def read() -> bytes:
            data = self.context.storage.staged(job_id)
            if data is None:
                raise UploadLost(UploadLost.message_text)
            return data

        return read

    def _observer(
        self, by_key: dict[str, list[Job]], updates: JobUpdates
    ) -> Callable[[ItemEvent], None]:
        states = ClaimStates(self.context.jobs, [j.id for jobs in by_key.values() for j in jobs])

        def observe(event: ItemEvent) -> None:
            for job in by_key.get(event.key, []):
                if event.state == "parsing" and states.cancelled(job.id):
                    updates.finished.add(job.id)
                    self.context.storage.unstage(job.id)
                    raise JobCancelled(f"job {job.id} was cancelled")
                if event.state == "embedding":
                    updates.embedding(job.id)
                elif event.state == "indexed":
                    updates.indexed(job.id, event.file_id)
                elif event.state == "failed" and not isinstance(event.error, JobCancelled):
                    updates.write()
                    updates.finished.add(job.id)
                    assert event.error is not None
                    self.context.fail(job, event.error)

        return observe


class ClaimStates:
    """The states of a claim's jobs, read again at most every WRITE_EVERY seconds: a cancel
    stops a job that has not begun within that, and a claim costs a read, not one a file
    (as much as parsing a small file)."""

    def __init__(self, jobs: JobStore, job_ids: Sequence[str]) -> None:
        self.jobs, self.job_ids = jobs, job_ids
        self._states: dict[str, str] = {}
        self._read_at = float("-inf")

    def cancelled(self, job_id: str) -> bool:
        if time.monotonic() - self._read_at > WRITE_EVERY:
            self._states, self._read_at = self.jobs.states(self.job_ids), time.monotonic()
        return self._states.get(job_id) == "cancelled"


class ReembedJobs:
    """``reembed``: files into the new embedding space while a model switch runs."""

    def __init__(self, context: JobContext, spaces: Reembedder) -> None:
        self.context, self.spaces = context, spaces

    def ready(self) -> bool:
        return self.spaces.switching

    def run(self, kb_id: str, group: Sequence[Job]) -> None:  # noqa: ARG002 (any KB's)
        try:
            self.spaces.reembed(group)
        except CitewellError as exc:  # e.g. the new model's server is down: retried later
            for job in group:
                self.context.fail(job, exc)


class RechunkJobs:
    """``rechunk``: a knowledge base's files cut anew; waits for a model switch to end (its
    chunk sets would miss the new space)."""

    def __init__(self, context: JobContext, rechunker: Rechunks) -> None:
        self.context, self.rechunker = context, rechunker

    def ready(self) -> bool:
        return not (self.context.spaces is not None and self.context.spaces.switching)

    def run(self, kb_id: str, group: Sequence[Job]) -> None:
        self.rechunker.rechunk(kb_id, group)


SYNC_WAIT_SECONDS = 1.0  # how often a sync queued behind a running one looks again


class SyncJobs:
    """``sync``: one connector's run (the job's key is the connector's id)."""

    def __init__(self, context: JobContext, connectors: ConnectorRuns) -> None:
        self.context, self.connectors = context, connectors

    def ready(self) -> bool:
        return True

    def run(self, kb_id: str, group: Sequence[Job]) -> None:  # noqa: ARG002 (one KB's)
        for job in group:
            if self.context.jobs.running_elsewhere(job):  # one run of a connector at a time
                self.context.jobs.defer(job, SYNC_WAIT_SECONDS)
                continue
            try:
                self.connectors.run(job.key)
            except ConnectorNotFound:
                self.context.jobs.succeed_many([(job.id, "")], job.claim)  # deleted meanwhile
            except CitewellError as exc:
                self.context.fail(job, exc)
            else:
                self.context.jobs.succeed_many([(job.id, "")], job.claim)


JOB_HANDLERS.add("ingest", IngestJobs)
JOB_HANDLERS.add("sync", lambda c: SyncJobs(c, c.connectors) if c.connectors else None)
JOB_HANDLERS.add("reembed", lambda c: ReembedJobs(c, c.spaces) if c.spaces else None)
JOB_HANDLERS.add("rechunk", lambda c: RechunkJobs(c, c.rechunker) if c.rechunker else None)


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
