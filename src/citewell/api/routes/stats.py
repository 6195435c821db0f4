"""What the chunk store holds and how its indexes and memory serve searches, for admins
sizing a server: rows, the vector index's layout (and, when asked, its measured recall),
and this process's in-memory copies of single KBs of a big LanceDB table."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from citewell.api.deps import AdminDep, CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.stores.base import (
    IndexHealth,
    KbCopyStats,
    ReportsIndexHealth,
    ReportsKbCopies,
    ReportsTableCopy,
    TableCopyStats,
)
from citewell.types import ChunkFilter

router = APIRouter(prefix="/api/v1/stats", tags=["stats"], route_class=OffLoopJsonRoute)


class StoreStatsPublic(BaseModel):
    store: str  # the backend's class: LanceChunkStore, PostgresChunkStore
    rows: int
    index: IndexHealth | None  # None: the store cannot report its indexes
    kb_copies: KbCopyStats | None  # None: the store keeps none (PostgreSQL)
    table_copy: TableCopyStats | None  # None: the store keeps none (PostgreSQL)
    sentence_pairs: int  # rows of the table beside it (``sentence_vectors``)


@router.get("/store")
def store_stats(
    _: AdminDep,
    app: CitewellDep,
    recall_samples: Annotated[int, Query(ge=0, le=200)] = 0,
) -> StoreStatsPublic:
    """The active embedding model's chunk table. ``recall_samples`` > 0 also measures the
    vector index's recall@50 against exact search on that many stored vectors, as
    ``citewell check`` does (each sample is an exact search reading every vector), and
    that of the in-memory copy's index when one is held."""
    store = app.store
    index = store.health(recall_samples) if isinstance(store, ReportsIndexHealth) else None
    copies = store.kb_copies() if isinstance(store, ReportsKbCopies) else None
    table_copy = store.table_copy(recall_samples) if isinstance(store, ReportsTableCopy) else None
    rows = index.rows if index is not None else store.count(ChunkFilter())
    pairs = app.spaces.active.sentences.count(ChunkFilter())
    return StoreStatsPublic(
        store=type(store).__name__,
        rows=rows,
        index=index,
        kb_copies=copies,
        table_copy=table_copy,
        sentence_pairs=pairs,
    )
