"""The embedding space searches use, and a model change in progress (admins)."""

from __future__ import annotations

from dataclasses import dataclass

from citewell.auth.access import Access
from citewell.catalog.spaces import SpaceRecord
from citewell.engine.core import Engine
from citewell.operations.spaces import SwitchStatus
from citewell.services.accounts import require_admin
from citewell.types import ChunkFilter


@dataclass(frozen=True)
class EmbeddingState:
    active: SpaceRecord
    chunks: int  # in the active space
    switch: SwitchStatus | None  # None: no change under way


class EmbeddingService:
    def __init__(self, app: Engine, access: Access) -> None:
        self.app, self.access = app, require_admin(access)

    def state(self) -> EmbeddingState:
        """As the database says now (another process may have changed the space)."""
        spaces = self.app.spaces
        spaces.refresh()
        chunks = self.app.store.count(ChunkFilter())
        return EmbeddingState(spaces.active.record, chunks, spaces.status())
