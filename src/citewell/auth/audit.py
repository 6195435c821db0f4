"""The audit trail: who created, changed, deleted or shared what, and when. Entries hold names
and ids, never document text or secrets."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import sessionmaker

from citewell.auth.access import Access
from citewell.db import ensure_schema
from citewell.db.models import AuditRow


@dataclass(frozen=True)
class AuditEvent:
    id: int
    at: float
    actor_id: str
    actor: str
    action: str  # e.g. kb.create, file.upload, grant.set, key.revoke
    target_type: str
    target_id: str
    detail: dict[str, Any]


def _event(row: AuditRow) -> AuditEvent:
    detail = json.loads(row.detail) if row.detail else {}
    return AuditEvent(
        row.id, row.at, row.actor_id, row.actor, row.action, row.target_type, row.target_id, detail
    )


class AuditLog:
    def __init__(self, engine: Engine) -> None:
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def record(
        self, access: Access, action: str, target_type: str, target_id: str, **detail: Any
    ) -> None:
        row = AuditRow(
            at=time.time(),
            actor_id=access.user_id,
            actor=access.name,
            action=action,
            target_type=target_type,
            target_id=target_id,
            detail=json.dumps(detail, sort_keys=True) if detail else "",
        )
        with self._sessions() as session, session.begin():
            session.add(row)

    def find(
        self,
        limit: int = 100,
        action: str | None = None,
        actor: str | None = None,
        since: float | None = None,
        before_id: int | None = None,
    ) -> list[AuditEvent]:
        """Newest first. ``action`` matches exactly or as a prefix ending in '.' ('kb.')."""
        query = select(AuditRow).order_by(AuditRow.id.desc()).limit(limit)
        if action:
            query = query.where(
                AuditRow.action.startswith(action)
                if action.endswith(".")
                else AuditRow.action == action
            )
        if actor:
            query = query.where((AuditRow.actor == actor) | (AuditRow.actor_id == actor))
        if since is not None:
            query = query.where(AuditRow.at >= since)
        if before_id is not None:
            query = query.where(AuditRow.id < before_id)
        with self._sessions() as session:
            return [_event(r) for r in session.scalars(query)]
