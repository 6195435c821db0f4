"""What ingestion reports and needs: progress, per-item events, estimates, and the
protocols of its collaborators (a document reader, the active embedding space)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from citewell.embedders import CachedEmbedder
from citewell.enrich import EnrichCost, Enricher
from citewell.errors import CitewellError
from citewell.ingest.sentences import SpaceWriter
from citewell.loaders.after import AfterRead
from citewell.splitters import Splitter
from citewell.stores.base import ChunkStore
from citewell.types import Document

T = TypeVar("T")


@dataclass
class IngestProgress:
    """Running totals, handed to the progress callback after every file."""

    files_total: int = 0
    files_done: int = 0
    chunks_done: int = 0
    current: str = ""


ProgressCallback = Callable[[IngestProgress], None]


@dataclass(frozen=True)
class ItemEvent:
    """One source's step: parsing → embedding → indexed, or failed (with the error)."""

    key: str
    state: str
    file_id: str = ""
    error: CitewellError | None = None


Observer = Callable[[ItemEvent], None]


@dataclass(frozen=True)
class IngestEstimate:
    """What ingesting some sources would take, before any of it is done."""

    files: int
    chunks: int
    enrich: EnrichCost


class Reader(Protocol):
    """Extracts a document's text (``DocumentReader``, or ``IsolatedReader`` in a worker)."""

    def read(self, data: bytes, name: str) -> Document: ...

    def read_many(self, files: Sequence[tuple[bytes, str]]) -> list[Document | CitewellError]:
        """Several ``(data, name)`` at once: each one's Document or its error."""
        ...

    def read_each(
        self, files: Sequence[tuple[bytes, str]], after: AfterRead[T]
    ) -> list[T | CitewellError]:
        """``read_many``, each Document replaced by ``after(document, index)``, done where
        it was read (a worker process's, when extraction is isolated)."""
        ...


class ActiveSpace(Protocol):
    """What ingestion needs of an embedding space (``operations.spaces.Space``)."""

    @property
    def embedder(self) -> CachedEmbedder: ...

    @property
    def store(self) -> ChunkStore: ...

    @property
    def writer(self) -> SpaceWriter: ...


@dataclass(frozen=True)
class ChunkTarget:
    """One chunk set a file gets in a KB: its label and how its chunks are made."""

    label: str
    shared: bool  # the server's chunking, shared by every KB on it
    splitter: Splitter
    enricher: Enricher
    bm25_enriched: bool  # file name and title indexed with each chunk
    sentences: bool = False  # its chunks' sentence pairs are embedded too
