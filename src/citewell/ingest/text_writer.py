"""An import's stored texts, written in a process of its own when they go to a directory.

A file is four system calls (open, write, close, rename), and a thread takes the GIL back
after each one. While the import's own thread works in Python, each of those waits lasts
up to the interpreter's switch interval: a small file took 15 ms beside a busy thread
against 44 µs alone (docs/benchmarks/journal.md, "Stored texts off the GIL"), and an
import of small files spent most of its time waiting for its texts. A process has its own
GIL. A small batch, or a file store that cannot be handed to a process (a bucket's client),
is written in a thread as before; so is a batch the process failed to write.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context

from citewell.blobs.directory import DirectoryBlobs
from citewell.catalog.storage import FileStorage

log = logging.getLogger(__name__)
PROCESS_FROM = 128  # files in a batch: fewer are not worth starting a process for
WRITERS = 4  # threads writing a batch's texts


def store_texts(storage: FileStorage, texts: Sequence[tuple[str, str]]) -> None:
    """Each (file id, text) as the file's text and original (an import's are the same),
    by a few threads at once: creating a file waits on the file system's journal while
    the chunk store writes (0.7 ms a file here), and those waits overlap."""
    if len(texts) < PROCESS_FROM:
        _store(storage, texts)
        return
    with ThreadPoolExecutor(WRITERS, thread_name_prefix="citewell-texts") as pool:
        for done in [pool.submit(_store, storage, texts[n::WRITERS]) for n in range(WRITERS)]:
            done.result()


def _store(storage: FileStorage, texts: Sequence[tuple[str, str]]) -> None:
    for file_id, text in texts:
        storage.put_new_text(file_id, text)


class TextWriter:
    """Writes batches of texts beside the caller's work; ``close`` when the import ends."""

    def __init__(self, storage: FileStorage) -> None:
        self.storage = storage
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="citewell-import-texts")
        self._process: Executor | None = None
        self._failed = False

    def write(self, texts: Sequence[tuple[str, str]]) -> Future[None]:
        """Starts writing ``texts``; the future is done when all are stored."""
        small = len(texts) < PROCESS_FROM
        if small or self._failed or not isinstance(self.storage.blobs, DirectoryBlobs):
            return self._thread.submit(store_texts, self.storage, texts)
        if self._process is None:
            # spawn: forking a process that runs LanceDB's threads is not safe
            self._process = ProcessPoolExecutor(1, mp_context=get_context("spawn"))
        return self._process.submit(store_texts, self.storage, texts)

    def wait(self, written: Future[None], texts: Sequence[tuple[str, str]]) -> None:
        """Until ``written`` is done; texts the process failed to write are written here."""
        try:
            written.result()
        except Exception as error:
            if self._process is None or self._failed:
                raise
            log.warning("Writing stored texts in another process failed (%s); writing them "
                        "here.", error)  # fmt: skip
            self._failed = True
            store_texts(self.storage, texts)

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        if self._process is not None:
            self._process.shutdown(wait=True, cancel_futures=True)
