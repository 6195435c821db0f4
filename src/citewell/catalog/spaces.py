"""Embedding spaces in the metadata database: which one is searched, which one is being built.

A space is one model at one dimension with its own chunk table. Its embedding settings are
kept with it, so a server started with a new model can still embed queries for the old space
until the new one is complete. State changes are single transactions, so every process that
reads the table agrees on which space is active.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from citewell.db import ensure_schema
from citewell.db.engine import read_sessions
from citewell.db.models import EmbeddingSpaceRow

ACTIVE, BUILDING, RETIRED = "active", "building", "retired"


@dataclass(frozen=True)
class SpaceRecord:
    id: str  # the chunk table's name
    model_id: str
    dimension: int
    config: dict[str, str | int | float | None] = field(default_factory=dict)
    state: str = ACTIVE
    batch_id: str = ""
    created_at: float = 0.0
    changed_at: float = 0.0


def _record(row: EmbeddingSpaceRow) -> SpaceRecord:
    return SpaceRecord(
        row.id,
        row.model_id,
        row.dimension,
        json.loads(row.config),
        row.state,
        row.batch_id,
        row.created_at,
        row.changed_at,
    )


class SpaceRegistry:
    def __init__(self, engine: Engine) -> None:
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._reads = read_sessions(engine)

    def _one(self, state: str) -> SpaceRecord | None:
        with self._reads() as session:
            row = session.scalar(select(EmbeddingSpaceRow).where(EmbeddingSpaceRow.state == state))
            return _record(row) if row else None

    def active(self) -> SpaceRecord | None:
        return self._one(ACTIVE)

    def building(self) -> SpaceRecord | None:
        return self._one(BUILDING)

    def all(self) -> list[SpaceRecord]:
        with self._reads() as session:
            return [_record(r) for r in session.scalars(select(EmbeddingSpaceRow))]

    def retired(self) -> list[SpaceRecord]:
        with self._reads() as session:
            query = select(EmbeddingSpaceRow).where(EmbeddingSpaceRow.state == RETIRED)
            return [_record(r) for r in session.scalars(query)]

    def add(self, space: SpaceRecord) -> bool:
        """Record a new space in its state; False if another process recorded it first."""
        now = time.time()
        row = EmbeddingSpaceRow(
            id=space.id,
            model_id=space.model_id,
            dimension=space.dimension,
            config=json.dumps(space.config, sort_keys=True),
            state=space.state,
            batch_id=space.batch_id,
            created_at=now,
            changed_at=now,
        )
        try:
            with self._sessions() as session, session.begin():
                session.add(row)
        except IntegrityError:
            return False
        return True

    def activate(self, space_id: str) -> None:
        """The building space becomes the active one and the active one retires, at once."""
        now = time.time()
        with self._sessions() as session, session.begin():
            session.execute(
                update(EmbeddingSpaceRow)
                .where(EmbeddingSpaceRow.state == ACTIVE)
                .values(state=RETIRED, changed_at=now)
            )
            session.execute(
                update(EmbeddingSpaceRow)
                .where(EmbeddingSpaceRow.id == space_id)
                .values(state=ACTIVE, changed_at=now)
            )

    def retire(self, space_id: str) -> None:
        """A space no longer wanted (a switch given up); its table is dropped later."""
        with self._sessions() as session, session.begin():
            session.execute(
                update(EmbeddingSpaceRow)
                .where(EmbeddingSpaceRow.id == space_id)
                .values(state=RETIRED, changed_at=time.time())
            )

    def forget(self, space_id: str) -> None:
        """Its table is gone: the record goes too, so the model can be chosen again later."""
        with self._sessions() as session, session.begin():
            session.execute(delete(EmbeddingSpaceRow).where(EmbeddingSpaceRow.id == space_id))
