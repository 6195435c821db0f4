"""Parse, split and embed a batch of files before taking the index's lock.

The job worker ingests a claimed batch in slices, each under the ingestor's lock, so that a
user's upload waiting for the lock waits for one slice only. Slices alone would cost the
embedder its full batches; so the batch's files are parsed and split here first, and all
their chunks embedded in one pass (the vectors land in the embedding cache), without the
lock. Under the lock each slice then only writes. What was prepared is used only if it
still holds: the same bytes, and the same chunk sets (a KB's chunking may change
meanwhile); anything else is parsed again under the lock, as without a preload.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextvars import copy_context
from functools import partial
from typing import TYPE_CHECKING

from citewell.embedders import embedding_tenant
from citewell.errors import CitewellError
from citewell.ingest.chunk_rows import sha256
from citewell.ingest.run import ParseTask, PendingFile, Preloaded, embed_pending, prepare_files
from citewell.sources import SourceItem

if TYPE_CHECKING:
    from citewell.ingest.ingestor import Ingestor

logger = logging.getLogger(__name__)
# Small files go to a reader process in batches: a round trip a file cost this process a
# wake-up a file, which a busy server delays (docs/benchmarks/journal.md, "The job queue:
# parsing in batches").
BATCH_FILES = 16
BATCH_BYTES = 1 << 20
ALONE_BYTES = 256 << 10  # a file this big is read alone: it may take long


def preload(ingestor: Ingestor, items: Sequence[SourceItem], kb_id: str) -> Preloaded:
    """Parse and split the items that ``kb_id`` does not hold yet, and embed their chunks
    into the cache, as the KB's owner. Errors are kept for the ingest to report."""
    kb = ingestor.catalog.get_kb(kb_id)
    targets = ingestor.sets.targets(kb.id, ingestor.embedder)
    existing = ingestor.catalog.files_in_kb(kb.id, [item.key for item in items])
    files: dict[str, tuple[str, Future[PendingFile]]] = {}
    workers = max(1, ingestor.settings.extraction.extract_workers)
    read = [(item, item.read()) for item in items]
    digests = [sha256(data) for _, data in read]
    stored = ingestor.catalog.files_by_sha(digests, kb.owner_id)  # links: nothing to parse
    tasks: list[ParseTask] = []
    for (item, data), digest in zip(read, digests, strict=True):
        previous = existing.get(item.key)
        if (previous is not None and previous.sha256 == digest) or digest in stored:
            continue
        tasks.append(ParseTask(item, data, digest))
        files[item.key] = (digest, tasks[-1].future)
    with embedding_tenant(kb.owner_id), ThreadPoolExecutor(workers) as pool:
        parse = partial(prepare_files, ingestor.parsing(), tenant=kb.owner_id, targets=targets)
        for batch in batches(tasks, workers):
            pool.submit(copy_context().run, parse, batch)  # splitters embed as the tenant
        wait([task.future for task in tasks])
        _embed(ingestor, [t.future.result() for t in tasks if t.future.exception() is None])
    keys = [item.key for item, _ in read]
    return Preloaded(targets, files, dict(zip(keys, digests, strict=True)))


def batches(tasks: list[ParseTask], workers: int) -> list[list[ParseTask]]:
    """Small files in batches read in one round trip to a reader process (a big one alone),
    at least two batches a worker when there are enough files, so that the workers share
    them evenly."""
    size = max(1, min(BATCH_FILES, -(-len(tasks) // (2 * workers))))
    made: list[list[ParseTask]] = []
    current: list[ParseTask] = []
    held = 0
    for task in tasks:
        if len(task.data) > ALONE_BYTES:
            made.append([task])
            continue
        if current and (len(current) >= size or held + len(task.data) > BATCH_BYTES):
            made.append(current)
            current, held = [], 0
        current.append(task)
        held += len(task.data)
    return [*made, current] if current else made


def _embed(ingestor: Ingestor, parsed: list[PendingFile]) -> None:
    try:  # into the cache, and kept on each file for its write under the lock
        embed_pending(ingestor.embedder, parsed)
    except CitewellError as exc:  # e.g. an embedding server down: the ingest meets it again
        logger.info("embedding ahead of the lock failed (%s); embedding under it", exc.message)
