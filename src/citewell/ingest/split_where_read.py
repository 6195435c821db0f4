"""A batch's files split into their chunk sets where they are read: in the reader's worker
process, so the splitting, the chunk ids and the BM25 terms run off the server's GIL.

Most of what a small file cost the job worker's process was that Python: the threads that
write (LanceDB, SQLite, the file store) wait for the GIL after each system call, and a
thread busy splitting made each wait up to 5 ms (docs/benchmarks/journal.md, "The job
queue: files split where they are read"). A set splits there only when nothing of it must
stay here: no LLM writes its chunks' contexts (``contextual_chunks``,
``document_summary``), and its splitter is a built-in one that measures characters
(``splitters.portable``). Otherwise the file is split here, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from citewell.enrich.enrichment import Enrichment
from citewell.ingest.chunk_rows import ChunkRows
from citewell.splitters import Splitter, portable
from citewell.types import Document, StoredChunk

if TYPE_CHECKING:
    from citewell.ingest.types import ChunkTarget  # types only: it imports the stores

Rows = tuple[list[StoredChunk], list[str]]  # a set's chunk rows and the texts to embed


@dataclass(frozen=True)
class SetPlan:
    """A chunk set as it travels to the worker: a ``ChunkTarget`` without its enricher
    (whose LLM client and cache stay here)."""

    label: str
    shared: bool
    splitter: Splitter
    bm25_enriched: bool


@dataclass(frozen=True)
class SplitDocument:
    """A file read and split: its document, and each set's rows in the targets' order."""

    document: Document
    sets: tuple[Rows, ...]


@dataclass(frozen=True)
class SplitWhereRead:
    """What the reader's worker does with each document it reads (``read_each``)."""

    rows: ChunkRows
    plans: tuple[SetPlan, ...]
    files: tuple[tuple[str, str], ...]  # each file's id and name, in the order sent

    def __call__(self, document: Document, index: int) -> SplitDocument:
        file_id, name = self.files[index]
        return SplitDocument(
            document, tuple(self._rows(file_id, document, p, name) for p in self.plans)
        )

    def _rows(self, file_id: str, document: Document, plan: SetPlan, name: str) -> Rows:
        chunks = [c for c in plan.splitter.split(document) if c.text.strip()]
        return self.rows.rows(file_id, document, chunks, plan, name, Enrichment())


def split_where_read(
    rows: ChunkRows, targets: Sequence[ChunkTarget], files: Sequence[tuple[str, str]]
) -> SplitWhereRead | None:
    """The split of ``files`` (id, name) into ``targets`` for the reader to do, or None when
    a set must split here (see the module's docstring) or nothing is chunked."""
    if rows.bypass or not targets:
        return None
    if any(t.enricher.active or not portable(t.splitter) for t in targets):
        return None
    plans = tuple(SetPlan(t.label, t.shared, t.splitter, t.bm25_enriched) for t in targets)
    return SplitWhereRead(rows, plans, tuple(files))
