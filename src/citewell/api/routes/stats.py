"""What the chunk store holds and how its indexes and memory serve searches, for admins
sizing a server: rows, the vector index's layout (and, when asked, its measured recall),
and this process's in-memory copies of single KBs of a big LanceDB table."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from citewell.api.deps import AdminDep, CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.services import stats
from citewell.services.stats import IndexHealth, KbCopyStats, TableCopyStats

router = APIRouter(prefix="/api/v1/stats", tags=["stats"], route_class=OffLoopJsonRoute)


class StoreStatsPublic(BaseModel):
    store: str  # the backend's class: LanceChunkStore, PostgresChunkStore
    rows: int
    index: IndexHealth | None  # None: the store cannot report its indexes
    kb_copies: KbCopyStats | None  # None: the store keeps none (a plug-in's)
    table_copy: TableCopyStats | None  # None: the store keeps none (a plug-in's, say)
    sentence_pairs: int  # rows of the table beside it (``sentence_vectors``)


@router.get("/store")
def store_stats(
    access: AdminDep,
    app: CitewellDep,
    recall_samples: Annotated[int, Query(ge=0, le=200)] = 0,
) -> StoreStatsPublic:
    """The active embedding model's chunk table. ``recall_samples`` > 0 also measures the
    vector index's recall@50 against exact search on that many stored vectors, as
    ``citewell check`` does (each sample is an exact search reading every vector), and
    that of the in-memory copy's index when one is held."""
    return StoreStatsPublic(**vars(stats.store_stats(app, access, recall_samples)))
