"""The embedding space searches use, and the model change in progress."""

from __future__ import annotations

from fastapi import APIRouter

from citewell.api.deps import AdminDep, CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.schemas import EmbeddingPublic, SpacePublic, SwitchPublic
from citewell.types import ChunkFilter

router = APIRouter(prefix="/api/v1/embedding", tags=["embedding"], route_class=OffLoopJsonRoute)


@router.get("")
def embedding(app: CitewellDep, _: AdminDep) -> EmbeddingPublic:
    """The active embedding space and, while the model changes, how far re-embedding is
    (admins)."""
    app.spaces.refresh()
    active = app.spaces.active.record
    status = app.spaces.status()
    switch = None
    if status is not None:
        target = status.target
        switch = SwitchPublic(
            id=target.id,
            model_id=target.model_id,
            dimension=target.dimension,
            batch_id=target.batch_id,
            total=status.total,
            counts=status.jobs,
            stalled=status.stalled,
        )
    return EmbeddingPublic(
        active=SpacePublic(id=active.id, model_id=active.model_id, dimension=active.dimension),
        chunks=app.store.count(ChunkFilter()),
        switch=switch,
    )
