"""The state of one ingest run (``Ingestor``): files being parsed, parsed files waiting for
their embedding pass, counts and errors."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from citewell.catalog import Catalog, FileRecord, KnowledgeBase
from citewell.embedders.base import Embedder, Vectors
from citewell.errors import CitewellError, ParseError
from citewell.ingest.chunk_rows import ChunkRows, sha256
from citewell.ingest.links import PendingLink
from citewell.ingest.sentences import sentence_rows
from citewell.ingest.split_where_read import Rows, SplitDocument, split_where_read
from citewell.ingest.types import (
    ChunkTarget,
    IngestProgress,
    ItemEvent,
    Observer,
    ProgressCallback,
    Reader,
)
from citewell.sources import SourceItem
from citewell.types import Document, Section, StoredChunk


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
    # (model id, vectors): its chunks' rows, then its pairs'; kept from a pass made ahead.
    vectors: tuple[str, Vectors] | None = None

    def embedded_by(self, model_id: str) -> bool:
        return self.vectors is not None and self.vectors[0] == model_id


def embed_pending(embedder: Embedder, files: Sequence[PendingFile]) -> None:
    """Embed the files' chunks and sentence pairs in one pass (full batches) and keep each
    file's vectors on it, so the write needs no second look-up in the embedding cache."""
    texts = [t for f in files for t in [*f.embed_texts, *(c.text for c in f.pairs)]]
    vectors = embedder.embed(texts, "document") if texts else np.empty((0, 0), np.float32)
    start = 0
    for file in files:
        end = start + len(file.embed_texts) + len(file.pairs)
        file.vectors = (embedder.model_id, vectors[start:end])
        start = end


def vectors_of(embedder: Embedder, files: Sequence[PendingFile]) -> tuple[Vectors, Vectors]:
    """The files' chunk vectors and pair vectors, each as one matrix: those embedded ahead
    by this model kept, the others' made now in one pass."""
    embed_pending(embedder, [f for f in files if not f.embedded_by(embedder.model_id)])
    chunks, pairs = [], []
    for file in files:
        assert file.vectors is not None  # embedded above
        chunks.append(file.vectors[1][: len(file.chunks)])
        pairs.append(file.vectors[1][len(file.chunks) :])
    return _stacked(chunks), _stacked(pairs)


def _stacked(parts: list[Vectors]) -> Vectors:
    rows = [p for p in parts if len(p)]
    return np.vstack(rows) if rows else np.empty((0, 0), np.float32)


@dataclass(frozen=True)
class Preloaded:
    """Parsed files of a batch by item key: (the bytes' digest, the parse's future); and
    the digest of every item's bytes, parsed or not."""

    targets: tuple[ChunkTarget, ...] = ()
    files: dict[str, tuple[str, Future[PendingFile]]] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)

    def parsed(
        self, key: str, digest: str, targets: tuple[ChunkTarget, ...]
    ) -> Future[PendingFile] | None:
        """The parse of ``key``'s bytes ``digest`` into ``targets``, if it was done."""
        found = self.files.get(key)
        if found is None or found[0] != digest or targets != self.targets:
            return None
        return found[1]


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
    links: list[PendingLink] = field(default_factory=list)  # stored files, linked at a flush
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    observer: Observer | None = None
    preloaded: Preloaded | None = None  # parsed ahead of the lock (ingest.preload)
    # Digest → the tenant's stored file of those bytes (None: none), looked up at once for
    # the digests known ahead, and kept current as this run stores files.
    stored: dict[str, FileRecord | None] = field(default_factory=dict)

    def notify(
        self, key: str, state: str, file_id: str = "", error: CitewellError | None = None
    ) -> None:
        if self.observer is not None:
            self.observer(ItemEvent(key, state, file_id, error))

    def bump(self, key: str, amount: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + amount

    def look_up_stored(self, catalog: Catalog, digests: Iterable[str]) -> None:
        """The tenant's stored files of these bytes, in one query rather than one a file."""
        wanted = set(digests)
        found = catalog.files_by_sha(wanted, self.kb.owner_id)
        self.stored.update((digest, found.get(digest)) for digest in wanted)

    def stored_file(self, catalog: Catalog, digest: str) -> FileRecord | None:
        """The tenant's stored file of these bytes, if any (another tenant's: never)."""
        if digest in self.stored:
            return self.stored[digest]
        return catalog.file_by_sha(digest, self.kb.owner_id)


@dataclass(frozen=True)
class Parsing:
    """What turns an item's bytes into a PendingFile: the reader, the chunk row maker, and
    the catalog's file ids ((tenant, sha256) → id)."""

    reader: Reader
    rows: ChunkRows
    file_id: Callable[[str, str], str]
    split_where_read: bool = False  # extract_split_in_worker


def prepare_file(
    parsing: Parsing,
    item: SourceItem,
    data: bytes,
    digest: str,
    tenant: str,
    targets: Sequence[ChunkTarget],
) -> PendingFile:
    """Parse and split one item for each chunk set it goes into (runs in the parse pool)."""
    document = parsing.reader.read(data, item.reader_name or item.name)
    return split_file(parsing, item, data, digest, document, tenant, targets)


@dataclass(frozen=True)
class ParseTask:
    """One file of a batch parsed together: its item, bytes, their digest, and the future
    its PendingFile (or its error) is set on."""

    item: SourceItem
    data: bytes
    digest: str
    future: Future[PendingFile] = field(default_factory=Future)


def prepare_files(
    parsing: Parsing, tasks: Sequence[ParseTask], tenant: str, targets: Sequence[ChunkTarget]
) -> None:
    """Parse several small files in one read of the reader (one round trip to its worker
    process), split where they are read when the sets allow it (``split_where_read``),
    else here; each task's future gets its PendingFile or its error."""
    files = [(task.data, task.item.reader_name or task.item.name) for task in tasks]
    after = None
    if parsing.split_where_read:  # the reader's worker needs each file's id and name
        ids = [(parsing.file_id(tenant, task.digest), task.item.name) for task in tasks]
        after = split_where_read(parsing.rows, targets, ids)
    answers: Sequence[Document | SplitDocument | Exception]
    try:
        answers = (
            parsing.reader.read_each(files, after) if after else parsing.reader.read_many(files)
        )
    except Exception as exc:  # noqa: BLE001 - every file of the batch fails with it
        answers = [exc] * len(tasks)
    for task, answer in zip(tasks, answers, strict=False):
        try:
            if isinstance(answer, Exception):
                raise answer
            if isinstance(answer, SplitDocument):
                document, sets = answer.document, answer.sets
            else:
                document, sets = answer, None
            made = split_file(
                parsing, task.item, task.data, task.digest, document, tenant, targets, sets
            )
        except Exception as exc:  # noqa: BLE001 - the file's ingest raises it, as a parse would
            task.future.set_exception(exc)
        else:
            task.future.set_result(made)
    for task in tasks[len(answers) :]:  # never left waiting, even on a reader's bug
        task.future.set_exception(ParseError(f"{task.item.name}: the reader gave no answer."))


def split_file(
    parsing: Parsing,
    item: SourceItem,
    data: bytes,
    digest: str,
    document: Document,
    tenant: str,
    targets: Sequence[ChunkTarget],
    sets: Sequence[Rows] | None = None,
) -> PendingFile:
    """A parsed item split for each chunk set it goes into, with its catalog record;
    ``sets``: each target's rows, when the split was made where the file was read."""
    file_id = parsing.file_id(tenant, digest)  # not computable from the bytes alone
    if sets is None:  # one set per chunking the KB needs (two while re-chunked)
        sets = [parsing.rows.make(file_id, document, t, item.name) for t in targets]
    chunks: list[StoredChunk] = []
    embed_texts: list[str] = []
    pairs: list[StoredChunk] = []
    for target, (made, texts) in zip(targets, sets, strict=True):
        chunks += made
        embed_texts += texts
        if target.sentences:
            pairs += sentence_rows(made, texts)[0]
    record = FileRecord(
        id=file_id,
        sha256=digest,
        text_sha256=sha256(document.text.encode()),
        name=item.name,
        mime_type=document.mime_type,
        size=len(data),
        chunk_count=len(sets[0][0]) if sets else 0,
        status="indexed",
        created_at=time.time(),
        source=item.source,
        url=item.url,
        title=document.title or "",
        tenant=tenant,
    )
    return PendingFile(
        item, record, chunks, embed_texts, pairs, data, document.text, document.sections
    )
