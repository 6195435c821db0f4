"""Chunks made elsewhere, with their vectors, into a knowledge base (``citewell import``).

Nothing is parsed, split or embedded, so an import runs at the speed of the writes: the
way to move a corpus in from another system, or to build a large one from vectors already
computed. Each file's text is its chunks joined by blank lines, so the viewer shows it and
citations point into it; its chunks get their BM25 terms, ids and labels as ingested ones
do, as columns rather than an object a chunk (``ChunkRows.given_columns``). The vectors
must come from the model this server embeds queries with: their length is checked against
it, their meaning cannot be.

A file the KB holds with the same text is left alone; one with another text is replaced; a
text the KB's owner holds already is linked. The catalog is asked a group of files at a time,
before their rows and BM25 terms are made, so an import of held texts skips that work.
Chunks and stored texts (side by side), then catalog rows, are written a batch at a time,
under the ingestor's lock (other uploads take turns with a long import), in a thread while
the next batch is made (``write_behind``), a batch's catalog rows beside the next batch's
chunks (``catalog_behind``). So a crash leaves chunks or texts no catalog row names
(``citewell check --repair`` removes them), never a file without its chunks. The vectors
stay float32 matrices from the file read (a view of the batch read for each file) to the
store's write (``upsert_columns``): as Python floats they cost more than the write.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import accumulate, islice
from typing import TYPE_CHECKING

import numpy as np

from citewell.catalog import FileRecord, KnowledgeBase
from citewell.embedders import embedding_tenant
from citewell.errors import Conflict, InvalidInput
from citewell.ingest.catalog_behind import CatalogBehind
from citewell.ingest.chunk_files import ImportedFile
from citewell.ingest.chunk_rows import sha256
from citewell.ingest.gc_pause import fewer_collections
from citewell.ingest.terms_ahead import with_terms_ahead
from citewell.ingest.text_writer import TextWriter
from citewell.ingest.types import ChunkTarget
from citewell.ingest.write_behind import WriteBehind
from citewell.sources import SourceItem
from citewell.stores.columns import ChunkColumns

if TYPE_CHECKING:
    from citewell.ingest.ingestor import Ingestor

# Chunks per write: one fragment each, as many rows as the LanceDB store's upkeep compacts
# fragments up to (stores/lance/upkeep.py, SMALL_FRAGMENT_ROWS). Half that left every row of
# an import to be rewritten by the closing optimize: 10 s of 130 at a million chunks.
IMPORT_BATCH = 16_384
LOOKUP_GROUP = 1024  # files whose previous versions are looked up at once
SEPARATOR = "\n\n"


@dataclass
class ImportReport:
    files_seen: int = 0
    files_imported: int = 0
    files_unchanged: int = 0
    files_replaced: int = 0
    chunks_stored: int = 0
    seconds: float = 0.0

    @property
    def chunks_per_second(self) -> float:
        return self.chunks_stored / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class _NewFile:
    record: FileRecord
    text: str
    rows: ChunkColumns  # its chunks in each set, without their vectors: ``vectors``
    vectors: np.ndarray
    item: SourceItem  # what its KB link shows (or the link, should the text be held)


@dataclass(frozen=True)
class _Incoming:
    """A file as read, with what its group's look-ups found: the file the KB holds at its
    name, and whether the tenant holds its text already (then no rows are made for it)."""

    file: ImportedFile
    text: str
    starts: list[int]  # where each chunk begins in ``text``
    digest: str
    file_id: str
    previous: FileRecord | None = None
    held: bool = False

    @property
    def unchanged(self) -> bool:
        return self.previous is not None and self.previous.sha256 == self.digest

    @property
    def needs_rows(self) -> bool:
        return not (self.unchanged or self.held)


@dataclass
class _Batch:
    new: list[_NewFile] = field(default_factory=list)
    same: list[tuple[str, SourceItem]] = field(default_factory=list)  # stored already
    held: list[_Incoming] = field(default_factory=list)  # held when looked up
    replaced: list[str] = field(default_factory=list)  # file ids the new ones replace
    chunks: int = 0  # of the new files

    def add(self, file: _NewFile) -> None:
        self.new.append(file)
        self.chunks += len(file.rows)

    @property
    def empty(self) -> bool:
        return not (self.new or self.same or self.held or self.replaced)


class ChunkImport:
    """One import into one KB, as ``added_by`` (the KB's owner embeds nothing here, but the
    files are theirs: stored under their tenant)."""

    def __init__(self, ingestor: Ingestor, kb: KnowledgeBase, added_by: str = "") -> None:
        self.ingestor, self.kb, self.added_by = ingestor, kb, added_by
        self.stored: set[str] = set()  # file ids this import wrote
        self.texts = TextWriter(ingestor.storage)

    def run(
        self,
        files: Iterable[ImportedFile],
        progress: Callable[[ImportReport], None] | None = None,
    ) -> ImportReport:
        report, began = ImportReport(), time.perf_counter()
        ingestor = self.ingestor
        with ingestor.lock:  # the space and chunk sets as they are now
            model = ingestor.embedder.model_id
            targets = ingestor.sets.targets(self.kb.id, ingestor.embedder)
        groups = with_terms_ahead(
            self._looked_up(files), partial(self._bm25_texts, targets), ingestor.rows.stemmer
        )

        def written() -> None:
            report.seconds = time.perf_counter() - began
            if progress:
                progress(report)

        # closing: the terms' process, and the texts' (once every text is written); leaving
        # ``turns`` writes the last batch's catalog part, after ``writes`` its chunks
        with fewer_collections(), embedding_tenant(self.kb.owner_id), closing(groups), \
                closing(self.texts), CatalogBehind(ingestor.lock) as turns, \
                WriteBehind(written) as writes:  # fmt: skip
            for batch in self._batches(groups, targets, report):  # each written as the next
                writes.submit(partial(self._write, batch, targets, report, model, turns))
        # Also when every file was unchanged: an earlier import of them stopped before this
        # step (killed, or ^C) left its rows outside the indexes, and nothing else takes
        # them in before the next write. With nothing due it costs 0.02 s at 80,000 rows.
        with ingestor.lock:
            ingestor.writer.optimize()
        report.seconds = time.perf_counter() - began
        return report

    def _batches(
        self,
        groups: Iterable[tuple[list[_Incoming], list[str]]],
        targets: Sequence[ChunkTarget],
        report: ImportReport,
    ) -> Iterator[_Batch]:
        """The files' new chunks in batches of ``IMPORT_BATCH``, the last one smaller (none
        when nothing is left to write)."""
        batch = _Batch()
        for group, terms in groups:  # the next group's terms are made meanwhile
            made = iter(terms)
            for incoming in group:
                report.files_seen += 1
                wanted = len(incoming.starts) * len(targets) if incoming.needs_rows else 0
                self._add(batch, incoming, targets, report, list(islice(made, wanted)))
                if batch.chunks >= IMPORT_BATCH:
                    yield batch
                    batch = _Batch()
        if not batch.empty:
            yield batch

    def _looked_up(self, files: Iterable[ImportedFile]) -> Iterator[list[_Incoming]]:
        """Groups of files, each with the file the KB holds at its name and whether the
        tenant holds its text: asked a group at a time (not the whole KB: it may hold
        millions), before any rows or terms are made, so that re-importing texts already
        held costs their reading and linking only."""
        stream, catalog = iter(files), self.ingestor.catalog
        while group := list(islice(stream, LOOKUP_GROUP)):
            previous = catalog.files_in_kb(self.kb.id, [f.name for f in group])
            read = [self._read(file) for file in group]
            held = catalog.existing_files([r.file_id for r in read])
            yield [replace(r, previous=previous.get(r.file.name), held=r.file_id in held)
                   for r in read]  # fmt: skip

    def _read(self, file: ImportedFile) -> _Incoming:
        """The file's text, its chunks' places in it, and the file id of that text for the
        KB's owner."""
        text, starts = joined(file)
        digest = sha256(text.encode("utf-8"))
        return _Incoming(
            file, text, starts, digest, self.ingestor.catalog.file_id(self.kb.owner_id, digest)
        )

    def _bm25_texts(self, targets: Sequence[ChunkTarget], group: list[_Incoming]) -> list[str]:
        """What BM25 indexes of each chunk of the group's files that need rows, file by
        file, set by set."""
        given = self.ingestor.rows.given_bm25_texts
        return [t for f in group if f.needs_rows for target in targets
                for t in given(f.file, target)]  # fmt: skip

    def _add(
        self,
        batch: _Batch,
        incoming: _Incoming,
        targets: Sequence[ChunkTarget],
        report: ImportReport,
        terms: Sequence[str],
    ) -> None:
        """``terms``: the BM25 terms of the file's chunks in each set (``_bm25_texts``), when
        it needs rows."""
        if incoming.unchanged:
            report.files_unchanged += 1
            return
        self._check_vectors(incoming.file)
        if incoming.previous is not None:
            batch.replaced.append(incoming.previous.id)
            report.files_replaced += 1
        if incoming.held:
            batch.held.append(incoming)
        elif incoming.file_id in self.stored:  # the same text twice in this import
            batch.same.append((incoming.file_id, self._item(incoming.file)))
        else:
            self.stored.add(incoming.file_id)
            batch.add(self._new_file(incoming, targets, terms))

    def _item(self, file: ImportedFile) -> SourceItem:
        """What the file's KB link shows."""
        return SourceItem(file.name, file.name, lambda: b"", source="import", url=file.url,
                          added_by=self.added_by)  # fmt: skip

    def _new_file(
        self, incoming: _Incoming, targets: Sequence[ChunkTarget], terms: Sequence[str] | None
    ) -> _NewFile:
        """The file's rows in each set the KB reads (two while it is re-chunked), its terms
        in turn (None: made here)."""
        file, starts, file_id = incoming.file, incoming.starts, incoming.file_id
        made, count = ChunkColumns(), len(starts)
        for n, target in enumerate(targets):
            mine = terms[n * count : (n + 1) * count] if terms is not None else None
            self.ingestor.rows.given_columns(file_id, file, starts, target, mine, made)
        vectors = file.vectors
        if len(targets) > 1:  # (np.tile copies even once)
            vectors = np.tile(vectors, (len(targets), 1))
        record = self._record(file, file_id, incoming.digest, count, len(incoming.text))
        return _NewFile(record, incoming.text, made, vectors, self._item(file))

    def _record(
        self, file: ImportedFile, file_id: str, digest: str, chunks: int, size: int
    ) -> FileRecord:
        return FileRecord(
            id=file_id, sha256=digest, text_sha256=digest, name=file.name,
            mime_type="text/plain", size=size, chunk_count=chunks, status="indexed",
            created_at=time.time(), source="import", url=file.url, tenant=self.kb.owner_id,
        )  # fmt: skip

    def _check_vectors(self, file: ImportedFile) -> None:
        """The file's vectors are of the length the model gives (all of one length: the
        reader checked)."""
        dimension, length = self.ingestor.embedder.dimension, file.vectors.shape[1]
        if length != dimension:
            raise InvalidInput(
                f"{file.name}, chunk 1: a vector of {length} numbers, where this server's "
                f"embedding model gives {dimension}. Import vectors made by the model the "
                "server embeds queries with (embedding_model)."
            )

    def _write(
        self,
        batch: _Batch,
        targets: Sequence[ChunkTarget],
        report: ImportReport,
        model: str,
        turns: CatalogBehind,
    ) -> None:
        """Under the ingestor's lock, let go between batches when another writer waits,
        so that other uploads take turns with a long import rather than wait for all of
        it; the batch's catalog rows beside the next batch's chunks (``CatalogBehind``)."""
        turns.take()
        try:
            if self.ingestor.embedder.model_id != model:
                raise Conflict(
                    "The embedding model changed during the import; the files imported so "
                    f"far are kept. Import {model} vectors into the old space again, or "
                    "vectors of the new model."
                )
            self._write_batch(batch, targets, report, turns)
        except BaseException:
            turns.release(failed=True)
            raise
        turns.done()

    def _write_batch(
        self,
        batch: _Batch,
        targets: Sequence[ChunkTarget],
        report: ImportReport,
        turns: CatalogBehind,
    ) -> None:
        """Chunks and stored texts (at once: the chunk store's write waits on its disk, the
        texts' on theirs), then the catalog (one transaction, beside the next batch's
        chunks), then links to files stored before and the removal of what the new ones
        replace (once every catalog part before is written: they read it)."""
        ingestor = self.ingestor
        asked = [f.record.id for f in batch.new] + [f.file_id for f in batch.held]
        held = ingestor.catalog.existing_files(asked)
        # A held text deleted since its look-up is stored now (once, should it come twice).
        gone = {f.file_id: f for f in batch.held if f.file_id not in held}
        new = [f for f in batch.new if f.record.id not in held]
        new += [self._new_file(f, targets, None) for f in gone.values()]
        same = [*batch.same, *((f.record.id, f.item) for f in batch.new if f.record.id in held)]
        same += [
            (f.file_id, self._item(f.file)) for f in batch.held if gone.get(f.file_id) is not f
        ]
        if new:
            texts = [(f.record.id, f.text) for f in new]  # the original is the text too
            written = self.texts.write(texts)
            rows = ChunkColumns.joined([f.rows for f in new])
            ingestor.writer.upsert_columns(rows, np.concatenate([f.vectors for f in new]))
            self.texts.wait(written, texts)
            turns.submit(partial(self._catalog_rows, new))
        if same or batch.replaced:
            turns.wait()
        if same:  # the tenant holds these texts already: linked, not stored again
            ingestor.link_many(self.kb.id, same, targets)
        for file_id in batch.replaced:
            ingestor.remove_from_kb(self.kb.id, file_id)
        report.files_imported += len(new) + len(same)
        report.chunks_stored += sum(len(f.rows) for f in new)

    def _catalog_rows(self, new: list[_NewFile]) -> None:
        """The new files' records and their links into the KB, in one transaction each."""
        catalog, ingestor = self.ingestor.catalog, self.ingestor
        catalog.add_files([f.record for f in new], new=True)
        catalog.add_links([ingestor.link_of(self.kb.id, f.record.id, f.item) for f in new])


def joined(file: ImportedFile) -> tuple[str, list[int]]:
    """The file's text (its chunks joined by blank lines) and where each chunk begins."""
    texts = file.texts
    if not texts:
        return "", []
    starts = list(accumulate((len(t) + len(SEPARATOR) for t in texts[:-1]), initial=0))
    return SEPARATOR.join(texts), starts
