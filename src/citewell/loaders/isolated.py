"""Extraction (and the viewer's page renders) in a worker process, so a file cannot hang,
exhaust or crash the server.

The worker runs a ``DocumentReader`` under an address-space limit; the caller waits at most
``timeout`` seconds for each file and kills the worker past it (a new one starts on the next
file). Parsers are C and Python code fed untrusted bytes: this is where that risk is contained.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from citewell import errors
from citewell.errors import CitewellError, ParseError
from citewell.types import Document

if TYPE_CHECKING:
    from citewell.loaders import DocumentReader


@dataclass(frozen=True)
class ReaderConfig:
    """What a worker needs to build its reader; plain values, so it crosses processes."""

    ocr_engine: str = "auto"
    ocr_languages: str = "eng"
    ocr_dpi: int = 200
    max_chars: int = 20_000_000
    timeout: float = 300.0
    memory_mb: int = 4096

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

    def read(self, data: bytes, name: str) -> Document:
        document: Document = self._ask(("read", data, name), name)
        return document

    def render(self, data: bytes, page: int, width: int) -> bytes:
        """A PDF's page as a PNG, rendered in the worker (the renderer reads untrusted bytes
        too), under the same limits."""
        image: bytes = self._ask(("render", data, page, width), f"page {page}")
        return image

    def _ask(self, message: tuple[Any, ...], name: str) -> Any:
        with self._lock:
            connection = self._worker()
            connection.send(message)
            if not connection.poll(self.config.timeout):
                self._stop()
                raise ParseError(
                    f"{name}: {self.work} took longer than {self.config.timeout:g} s and was "
                    f"stopped; raise {self.limit} if the file is genuinely that big."
                )
            try:
                reply = connection.recv()
            except (EOFError, OSError) as exc:
                self._stop()
                raise ParseError(
                    f"{name}: the parser exceeded its memory limit (extract_memory_mb = "
                    f"{self.config.memory_mb}) or crashed; the file was not indexed."
                ) from exc
        if reply[0] == "ok":
            return reply[1]
        error_class = getattr(errors, reply[1], ParseError)
        if not (isinstance(error_class, type) and issubclass(error_class, CitewellError)):
            error_class = ParseError
        raise error_class(reply[2])

    def _worker(self) -> Connection:
        if self._process is None or not self._process.is_alive():
            self._stop()
            parent, child = self._context.Pipe()
            self._process = self._context.Process(
                target=_serve, args=(child, self.config), name="citewell-extract", daemon=True
            )
            self._process.start()
            child.close()
            self._connection = parent
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
    reader = config.reader()
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        connection.send(_answer(reader, message))


def _answer(reader: DocumentReader, message: tuple[Any, ...]) -> tuple[Any, ...]:
    kind, data, *rest = message
    name = rest[0] if kind == "read" else f"page {rest[0]}"
    try:
        if kind == "render":
            return ("ok", reader.render(data, rest[0], rest[1]))
        return ("ok", reader.read(data, name))
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

    def render(self, data: bytes, page: int, width: int) -> bytes:
        reader = self._free.get()
        try:
            return reader.render(data, page, width)
        finally:
            self._free.put(reader)

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
