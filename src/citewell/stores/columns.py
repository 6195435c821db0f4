"""Many chunks as columns, for writes too big for an object a chunk (``citewell import``).

At a million imported chunks, making a ``StoredChunk`` for each and reading its fields back
into Arrow columns cost 11 s of the importing process's Python time (py-spy, journal:
"Columns from the file to the table"). An import builds the columns directly; a store that
takes them writes them as they are, any other gets its ``StoredChunk``s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Protocol, runtime_checkable

import numpy as np

from citewell.errors import StoreError
from citewell.stores.base import ChunkStore, upsert_matrix
from citewell.types import StoredChunk


@dataclass
class ChunkColumns:
    """``StoredChunk``'s fields as a list each, row ``i`` of every list one chunk (its
    vector kept apart, in a matrix)."""

    id: list[str] = field(default_factory=list)
    file_id: list[str] = field(default_factory=list)
    kb_ids: list[tuple[str, ...]] = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    page: list[int | None] = field(default_factory=list)
    headings: list[tuple[str, ...]] = field(default_factory=list)
    file_name: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.id)

    def extend(self, other: ChunkColumns) -> None:
        for name in COLUMNS:
            getattr(self, name).extend(getattr(other, name))

    @classmethod
    def of(cls, chunks: Sequence[StoredChunk]) -> ChunkColumns:
        """Chunks as columns (their vectors left out)."""
        return cls(*(list(map(attrgetter(name), chunks)) for name in COLUMNS))

    @classmethod
    def joined(cls, parts: Sequence[ChunkColumns]) -> ChunkColumns:
        whole = cls()
        for part in parts:
            whole.extend(part)
        return whole

    def chunks(self) -> list[StoredChunk]:
        """The rows as ``StoredChunk``s (without vectors)."""
        return [StoredChunk(*row) for row in zip(*(getattr(self, n) for n in COLUMNS), strict=True)]


COLUMNS = tuple(f.name for f in fields(ChunkColumns))  # StoredChunk's fields but the vector


@runtime_checkable
class UpsertsColumns(Protocol):
    """A store that writes chunks given as columns, their vectors as one float32 matrix."""

    def upsert_columns(self, columns: ChunkColumns, vectors: np.ndarray) -> int:
        """``upsert_matrix`` of ``columns.chunks()``, without making them."""
        ...


def upsert_columns(store: ChunkStore, columns: ChunkColumns, vectors: np.ndarray) -> int:
    """Chunks as columns with their vectors as one matrix: as columns where the store takes
    them, else as ``StoredChunk``s (``stores.base.upsert_matrix``)."""
    if len(vectors) != len(columns):
        raise StoreError(f"{len(columns)} chunks came with {len(vectors)} vectors.")
    if isinstance(store, UpsertsColumns):
        return store.upsert_columns(columns, vectors)
    return upsert_matrix(store, columns.chunks(), vectors)
