"""The embedding space searches use, and the model change in progress."""

from __future__ import annotations

from fastapi import APIRouter

from citewell.api.deps import AdminDep, CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.schemas import EmbeddingPublic, SpacePublic, SwitchPublic
from citewell.services.embedding import EmbeddingService

router = APIRouter(prefix="/api/v1/embedding", tags=["embedding"], route_class=OffLoopJsonRoute)


@router.get("")
def embedding(app: CitewellDep, access: AdminDep) -> EmbeddingPublic:
    """The active embedding space and, while the model changes, how far re-embedding is
    (admins)."""
    state = EmbeddingService(app, access).state()
    active, status, switch = state.active, state.switch, None
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
        chunks=state.chunks,
        switch=switch,
    )
