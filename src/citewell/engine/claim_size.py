"""How many queued files the job runner claims at once.

A claim pays fixed costs whatever its files hold: the chunk store's append and its look-up
of the claim's files, the catalog's commits, the jobs' states. With files of one abstract
(about two chunks each) those were most of a claim of 64, and the queue ran at 1,552-1,767
chunks/s; claims of 256 such files ran at 2,210-2,397 (docs/benchmarks/journal.md, "The job
queue with bigger claims"). A claim holds its files' texts and vectors until written, so it
grows only while the files ingested lately made few chunks each: up to ``max_files``, to
about as many chunks as ``batch_files`` files of ``CHUNKS_PER_FILE`` make.
"""

from __future__ import annotations

CHUNKS_PER_FILE = 8  # what a claim of batch_files files is sized for
SMOOTHING = 0.5  # weight of the newest ingest in the chunks-a-file estimate


class ClaimSize:
    """Files a claim takes: ``batch_files``, more (up to ``max_files``) for small files."""

    def __init__(self, batch_files: int, max_files: int | None = None) -> None:
        self.batch_files = batch_files
        self.max_files = max(batch_files, max_files or batch_files)
        # Written by the runner's thread alone (its ingests), read by it and by the thread
        # taking the next claim ahead: one float swapped whole, no lock needed.
        self._chunks_per_file: float | None = None

    def observe(self, files: int, chunks: int) -> None:
        """An ingest wrote ``chunks`` chunks of ``files`` new files."""
        if files <= 0:
            return
        seen, last = chunks / files, self._chunks_per_file
        self._chunks_per_file = seen if last is None else last + SMOOTHING * (seen - last)

    def files(self) -> int:
        """Files the next claim takes."""
        per_file = self._chunks_per_file
        if per_file is None:
            return self.batch_files
        wanted = self.batch_files * CHUNKS_PER_FILE / max(per_file, 1.0)
        return max(self.batch_files, min(self.max_files, round(wanted)))

    def slice_files(self, slice_files: int, claimed: int) -> int:
        """Files written under one hold of the index's lock: ``slice_files`` (the setting),
        grown as far as a claim has grown past ``batch_files``."""
        return max(slice_files, claimed * slice_files // self.batch_files)
