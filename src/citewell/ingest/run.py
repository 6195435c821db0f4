"""The state of one ingest run (``Ingestor``): files being parsed, parsed files waiting for
their embedding pass, counts and errors."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

from citewell.catalog import FileRecord, KnowledgeBase
from citewell.errors import CitewellError
from citewell.ingest.types import (
    ChunkTarget,
    IngestProgress,
    ItemEvent,
    Observer,
    ProgressCallback,
)
from citewell.sources import SourceItem
from citewell.types import Section, StoredChunk


@dataclass
class PendingFile:
    """A file parsed and split, waiting for its embedding pass."""

    item: SourceItem
    record: FileRecord
    chunks: list[StoredChunk]
    embed_texts: list[str]
    pairs: list[StoredChunk]  # sentence pairs of chunks in sets that embed them
    data: bytes
    text: str
    sections: tuple[Section, ...]


@dataclass
class IngestRun:
    """One ingest call's state: what is being parsed, what waits to be embedded, counts."""

    kb: KnowledgeBase
    progress: IngestProgress
    callback: ProgressCallback | None
    targets: tuple[ChunkTarget, ...]  # the chunk sets each file gets in the KB
    pending: list[PendingFile] = field(default_factory=list)  # parsed, waiting to be embedded
    # Being parsed: future → (item, digest, the file its path held before, if any).
    parsing: dict[Future[PendingFile], tuple[SourceItem, str, FileRecord | None]] = field(
        default_factory=dict
    )
    later: list[SourceItem] = field(default_factory=list)  # same bytes as one being parsed
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    observer: Observer | None = None

    def notify(
        self, key: str, state: str, file_id: str = "", error: CitewellError | None = None
    ) -> None:
        if self.observer is not None:
            self.observer(ItemEvent(key, state, file_id, error))

    def bump(self, key: str, amount: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + amount
