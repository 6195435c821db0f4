"""Connectors in the database: what each syncs, when it runs next, how its last run went."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from citewell.db.models import ConnectorRow, GroupMemberRow, GroupRow, UserRow
from citewell.errors import NameTaken
from citewell.sources.connectors.entries import Reader
from citewell.sources.connectors.secrets import CredentialBox

MAX_ERRORS = 50  # per-item errors kept with a run's status


@dataclass(frozen=True)
class SyncStatus:
    """A connector's last run: ``state`` never, queued, running, ok or failed."""

    state: str = "never"
    started_at: float = 0.0
    finished_at: float = 0.0
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    chunks_embedded: int = 0
    message: str = ""
    errors: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, text: str) -> SyncStatus:
        data = json.loads(text or "{}")
        data["errors"] = tuple(data.get("errors", ()))
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def to_json(self) -> str:
        data = self.__dict__ | {"errors": list(self.errors[:MAX_ERRORS])}
        return json.dumps(data)


@dataclass(frozen=True)
class Connector:
    id: str
    kb_id: str
    kind: str
    name: str
    target: str
    options: Mapping[str, str]
    has_credentials: bool
    interval: float
    paused: bool
    created_by: str
    local: bool
    created_at: float
    updated_at: float
    next_run_at: float
    status: SyncStatus = field(default_factory=SyncStatus)
    cursor: str = ""

    @property
    def folder(self) -> str:
        """Where its files go in the KB ('' for the top; else ending in '/')."""
        base = self.options.get("folder", "").strip("/")
        return f"{base}/" if base else ""


def _connector(row: ConnectorRow) -> Connector:
    return Connector(
        row.id,
        row.kb_id,
        row.kind,
        row.name,
        row.target,
        json.loads(row.options or "{}"),
        bool(row.secret),
        row.interval,
        bool(row.paused),
        row.created_by,
        bool(row.local),
        row.created_at,
        row.updated_at,
        row.next_run_at,
        SyncStatus.from_json(row.status),
        row.cursor,
    )


class ConnectorStore:
    def __init__(self, engine: Engine, box: CredentialBox) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self.box = box

    def create(
        self,
        kb_id: str,
        kind: str,
        name: str,
        target: str,
        options: Mapping[str, str],
        credentials: Mapping[str, str],
        interval: float,
        created_by: str = "",
        local: bool = False,
    ) -> Connector:
        now = time.time()
        row = ConnectorRow(
            kb_id=kb_id,
            kind=kind,
            name=name,
            target=target,
            options=json.dumps(dict(options)),
            secret=self.box.seal(credentials),
            interval=interval,
            created_by=created_by,
            local=int(local),
            created_at=now,
            updated_at=now,
            next_run_at=now,
        )
        try:
            with self._sessions() as session, session.begin():
                session.add(row)
        except IntegrityError as exc:
            raise NameTaken(
                f"This knowledge base already has a connector named {name!r}; pick another name."
            ) from exc
        return _connector(row)

    def get(self, connector_id: str) -> Connector | None:
        with self._sessions() as session:
            row = session.get(ConnectorRow, connector_id)
            return _connector(row) if row is not None else None

    def of_kbs(self, kb_ids: Collection[str] | None) -> list[Connector]:
        """Connectors of these KBs (None: of every KB), oldest first."""
        query = select(ConnectorRow).order_by(ConnectorRow.created_at)
        if kb_ids is not None:
            query = query.where(ConnectorRow.kb_id.in_(list(kb_ids)))
        with self._sessions() as session:
            return [_connector(r) for r in session.scalars(query)]

    def reader(self, user_id: str) -> Reader | None:
        """The user a connector reads for, with their groups now (None: no such user, or
        disabled: their connectors read no granted folder). A connector made with
        authentication off has no owner and reads as an admin (as everyone was then)."""
        if not user_id:
            return Reader("", admin=True)
        with self._sessions() as session:
            user = session.get(UserRow, user_id)
            if user is None or user.disabled:
                return None
            groups = session.scalars(
                select(GroupRow.name)
                .join(GroupMemberRow, GroupMemberRow.group_id == GroupRow.id)
                .where(GroupMemberRow.user_id == user_id)
            )
            return Reader(user.name, frozenset(groups), user.role == "admin")

    def credentials(self, connector_id: str) -> dict[str, str]:
        with self._sessions() as session:
            row = session.get(ConnectorRow, connector_id)
            return self.box.open(row.secret) if row is not None else {}

    def update(
        self, connector_id: str, credentials: Mapping[str, str] | None = None, **changes: object
    ) -> Connector | None:
        """Change fields (options as a mapping); ``credentials`` replaces the stored ones."""
        with self._sessions() as session, session.begin():
            row = session.get(ConnectorRow, connector_id)
            if row is None:
                return None
            for name, value in changes.items():
                stored = value
                if name == "options":
                    stored = json.dumps(dict(value))  # type: ignore[call-overload]
                elif name == "paused":
                    stored = int(bool(value))
                setattr(row, name, stored)
            if credentials is not None:
                row.secret = self.box.seal(credentials)
            row.updated_at = time.time()
            return _connector(row)

    def delete(self, connector_id: str) -> None:
        with self._sessions() as session, session.begin():
            row = session.get(ConnectorRow, connector_id)
            if row is not None:
                session.delete(row)

    def set_status(self, connector_id: str, status: SyncStatus, cursor: str | None = None) -> None:
        values: dict[str, object] = {"status": status.to_json()}
        if cursor is not None:
            values["cursor"] = cursor
        with self._sessions() as session, session.begin():
            session.execute(
                update(ConnectorRow).where(ConnectorRow.id == connector_id).values(**values)
            )

    def due(self, now: float) -> list[Connector]:
        query = select(ConnectorRow).where(
            (ConnectorRow.paused == 0) & (ConnectorRow.next_run_at <= now)
        )
        with self._sessions() as session:
            return [_connector(r) for r in session.scalars(query)]

    def reschedule(self, connector_id: str, next_run_at: float) -> None:
        """The next scheduled run moved (a run was just queued by hand, push or watch)."""
        with self._sessions() as session, session.begin():
            session.execute(
                update(ConnectorRow)
                .where(ConnectorRow.id == connector_id)
                .values(next_run_at=next_run_at)
            )

    def take_turn(self, connector: Connector, next_run_at: float) -> bool:
        """Move the connector's next run on, unless another process did first (then False):
        of several schedulers, one queues each run."""
        with self._sessions() as session, session.begin():
            moved = session.execute(
                update(ConnectorRow)
                .where(
                    (ConnectorRow.id == connector.id)
                    & (ConnectorRow.next_run_at == connector.next_run_at)
                )
                .values(next_run_at=next_run_at)
            )
            return bool(moved.rowcount)  # type: ignore[attr-defined]
