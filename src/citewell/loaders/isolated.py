"""Extraction (and the viewer's page renders) in a worker process, so a file cannot hang,
exhaust or crash the server.

The worker runs a ``DocumentReader`` under an address-space limit; the caller waits at most
``timeout`` seconds for each file and kills the worker past it (a new one starts on the next
file). Parsers are C and Python code fed untrusted bytes: this is where that risk is contained.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from citewell import errors
from citewell.errors import CitewellError, ParseError
from citewell.loaders.after import AfterRead, after_read, as_read
from citewell.types import Document

if TYPE_CHECKING:
    from citewell.loaders import DocumentReader


T = TypeVar("T")
YIELDING = 10  # the niceness of a worker past yield_after
SEND_AFTER = 0.2  # seconds a batch's answers wait for others before they are sent


@dataclass(frozen=True)
class ReaderConfig:
    """What a worker needs to build its reader; plain values, so it crosses processes."""

    ocr_engine: str = "auto"
    ocr_languages: str = "eng"
    ocr_dpi: int = 200
    max_chars: int = 20_000_000
    timeout: float = 300.0
    memory_mb: int = 4096
    # Seconds after which a task still running yields its CPU (niceness +10) to the server
    # and the other workers: a page drawn for long is one built to be slow. 0: never.
    yield_after: float = 0.0

    def reader(self) -> DocumentReader:
        from citewell.loaders import DocumentReader  # here: loaders/__init__ is the importer
        from citewell.loaders.ocr import build_ocr

        ocr = build_ocr(self.ocr_engine, self.ocr_languages, timeout=self.timeout)
        return DocumentReader(ocr, self.ocr_dpi, self.max_chars)


class IsolatedReader:
    """``read(data, name)`` like ``DocumentReader``, run in a worker process with limits."""

    def __init__(
        self, config: ReaderConfig, work: str = "text extraction", limit: str = "extract_timeout"
    ) -> None:
        """``work`` and ``limit``: what the worker does and the setting of its time limit,
        for the message when it runs over."""
        self.config, self.work, self.limit = config, work, limit
        self._context = multiprocessing.get_context("spawn")  # no fork of a threaded server
        self._lock = threading.Lock()
        self._process: Any = None
        self._connection: Connection | None = None
        self._ready = False  # the worker said it is up (its imports done)

    def read(self, data: bytes, name: str) -> Document:
        document: Document = self._ask(("read", data, name), name)
        return document

    def read_many(self, files: Sequence[tuple[bytes, str]]) -> list[Document | CitewellError]:
        """Several files (``(data, name)``) sent in one message: each file read alone costs
        this thread a wake-up per message, which a busy server delays (a small file: 0.35 ms
        alone, 9 ms beside one thread busy in Python). Each file gets its Document or its
        error."""
        return self.read_each(files, as_read)

    def read_each(
        self, files: Sequence[tuple[bytes, str]], after: AfterRead[T]
    ) -> list[T | CitewellError]:
        """``read_many``, with ``after(document, index)`` done in the worker for each file
        and sent back in the document's place. The worker answers fast files together and
        a slow one at once, so the time limit applies to each file. Past the time limit, or
        when the worker dies, the files not answered yet are read again one at a time, so
        only the guilty one fails."""
        answered: list[T | CitewellError] = []
        try:
            with self._lock:
                connection = self._send(("read_many", list(files), after))
                while len(answered) < len(files):
                    name = files[len(answered)][1]
                    answered += [_outcome(r) for r in self._receive(connection, name)[1]]
        except ParseError as exc:
            if len(files) == 1:
                return [exc]
            left = range(len(answered), len(files))
            return answered + [self.read_each([files[i]], Shifted(after, i))[0] for i in left]
        return answered

    def render(self, data: bytes, page: int, width: int) -> bytes:
        """A PDF's page as a PNG, rendered in the worker (the renderer reads untrusted bytes
        too), under the same limits."""
        image: bytes = self._ask(("render", data, page, width), f"page {page}")
        return image

    def _ask(self, message: tuple[Any, ...], name: str) -> Any:
        with self._lock:
            connection = self._send(message)
            reply = self._receive(connection, name)
        outcome = _outcome(reply)
        if isinstance(outcome, CitewellError):
            raise outcome
        return outcome

    def _send(self, message: tuple[Any, ...]) -> Connection:
        connection = self._worker()
        if not self._ready and connection.poll(self.config.timeout):
            self._ready = connection.recv() == ("ready",)
        connection.send(message)
        return connection

    def _receive(self, connection: Connection, name: str) -> tuple[Any, ...]:
        """The worker's next reply, within the time limit; past it, or when the worker
        died, a ParseError (the worker is stopped, and its successor started)."""
        if not self._answered_in_time(connection):
            self._stop()
            self._worker()  # its successor starts now, not on the next file's clock
            raise ParseError(
                f"{name}: {self.work} took longer than {self.config.timeout:g} s and was "
                f"stopped; raise {self.limit} if the file is genuinely that big."
            )
        try:
            reply: tuple[Any, ...] = connection.recv()
        except (EOFError, OSError) as exc:
            self._stop()
            raise ParseError(
                f"{name}: the parser exceeded its memory limit (extract_memory_mb = "
                f"{self.config.memory_mb}) or crashed; the file was not indexed."
            ) from exc
        return reply

    def _answered_in_time(self, connection: Connection) -> bool:
        """Wait for the worker's answer up to the time limit; past ``yield_after`` its
        process runs at a lower priority until it answers."""
        slow_after = self.config.yield_after
        if not 0 < slow_after < self.config.timeout or connection.poll(slow_after):
            return connection.poll(self.config.timeout)
        pid = self._process.pid
        os.setpriority(os.PRIO_PROCESS, pid, YIELDING)
        answered = connection.poll(self.config.timeout - slow_after)
        if answered:
            with contextlib.suppress(OSError):  # back to normal (only root may lower it)
                os.setpriority(os.PRIO_PROCESS, pid, 0)
        return answered

    @property
    def warm(self) -> bool:
        """Whether its worker process is up and waiting (the next ask waits for no start).
        Only for a reader nobody is asking now."""
        if self._process is None or not self._process.is_alive() or self._connection is None:
            return False
        if not self._ready and self._connection.poll(0):
            self._ready = self._connection.recv() == ("ready",)
        return self._ready

    def start(self) -> None:
        """Start its worker process now, if none runs (without waiting for it to be up)."""
        with self._lock:
            self._worker()

    def _worker(self) -> Connection:
        if self._process is None or not self._process.is_alive():
            self._stop()
            parent, child = self._context.Pipe()
            self._process = self._context.Process(
                target=_serve, args=(child, self.config), name="citewell-extract", daemon=True
            )
            self._process.start()
            child.close()
            self._connection, self._ready = parent, False
        assert self._connection is not None
        return self._connection

    def _stop(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        if self._connection is not None:
            self._connection.close()
        self._process = self._connection = None

    def close(self) -> None:
        with self._lock:
            if self._connection is not None and self._process is not None:
                try:
                    self._connection.send(None)
                    self._process.join(2)
                except OSError:
                    pass
            self._stop()


def _serve(connection: Connection, config: ReaderConfig) -> None:
    """The worker's loop: one file in, a Document or an error description out."""
    if config.memory_mb > 0:
        import resource

        limit = config.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    readers: list[DocumentReader] = []  # built on the first file: a page renderer needs none
    connection.send(("ready",))
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        if message[0] == "read_many":
            _read_many(connection, config, readers, message[1], message[2])
        else:
            connection.send(_answer(config, readers, message))


def _read_many(
    connection: Connection,
    config: ReaderConfig,
    readers: list[DocumentReader],
    files: list[tuple[bytes, str]],
    after: AfterRead[Any] = as_read,
) -> None:
    """Each file's answer, sent together with the others' while they come fast, and at
    once after a file that took a while: the caller's time limit is then a file's."""
    answers: list[tuple[Any, ...]] = []
    sent = time.monotonic()
    for index, file in enumerate(files):
        answers.append(_answer(config, readers, ("read", *file), after, index))
        if time.monotonic() - sent >= SEND_AFTER:
            connection.send(("ok", answers))
            answers, sent = [], time.monotonic()
    if answers:
        connection.send(("ok", answers))


@dataclass(frozen=True)
class Shifted(Generic[T]):
    """``after`` for a file read alone: its index among the files first sent together."""

    after: AfterRead[T]
    offset: int

    def __call__(self, document: Document, index: int) -> T:
        return self.after(document, index + self.offset)


def _outcome(reply: tuple[Any, ...]) -> Any:
    """A worker's reply as its value, or as the error it describes (not raised)."""
    if reply[0] == "ok":
        return reply[1]
    error_class = getattr(errors, reply[1], ParseError)
    if not (isinstance(error_class, type) and issubclass(error_class, CitewellError)):
        error_class = ParseError
    return error_class(reply[2])


def _answer(
    config: ReaderConfig,
    readers: list[DocumentReader],
    message: tuple[Any, ...],
    after: AfterRead[Any] = as_read,
    index: int = 0,
) -> tuple[Any, ...]:
    kind, data, *rest = message
    name = rest[0] if kind == "read" else f"page {rest[0]}"
    try:
        if kind == "render":
            from citewell.loaders.pdf import render_page

            return ("ok", render_page(data, rest[0], rest[1]))
        if not readers:
            readers.append(config.reader())
        return ("ok", after_read(after, readers[0].read(data, name), index))
    except CitewellError as exc:
        return ("error", type(exc).__name__, exc.message)
    except MemoryError:
        return ("error", "ParseError", f"{name}: the parser ran out of memory.")
    except Exception as exc:  # noqa: BLE001 - any parser failure on bad bytes is bad input
        return ("error", "ParseError", f"{name} could not be read ({type(exc).__name__}: {exc}).")


class ReaderPool:
    """Several isolated readers, so that several files are parsed at once; ``read`` uses
    whichever is free. Each worker process starts on its first file."""

    def __init__(self, config: ReaderConfig, size: int) -> None:
        self.config = config
        self._readers = [IsolatedReader(config) for _ in range(max(1, size))]
        self._free: queue.SimpleQueue[IsolatedReader] = queue.SimpleQueue()
        for reader in self._readers:
            self._free.put(reader)

    def read(self, data: bytes, name: str) -> Document:
        reader = self._free.get()
        try:
            return reader.read(data, name)
        finally:
            self._free.put(reader)

    def read_many(self, files: Sequence[tuple[bytes, str]]) -> list[Document | CitewellError]:
        return self.read_each(files, as_read)

    def read_each(
        self, files: Sequence[tuple[bytes, str]], after: AfterRead[T]
    ) -> list[T | CitewellError]:
        reader = self._free.get()
        try:
            return reader.read_each(files, after)
        finally:
            self._free.put(reader)

    def render(self, data: bytes, page: int, width: int) -> bytes:
        reader = self._free.get()
        try:
            return reader.render(data, page, width)
        finally:
            self._free.put(reader)

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
