"""Groups, and grants of read or write access to knowledge bases (to a user, a group or
every signed-in user)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, literal, null, or_, select, union_all
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from citewell.auth.access import Access
from citewell.auth.store import ApiKey, User
from citewell.db import ensure_schema
from citewell.db.changes import ChangeCache, change_counter
from citewell.db.engine import read_sessions
from citewell.db.models import (
    GrantRow,
    GroupMemberRow,
    GroupRow,
    KnowledgeBaseRow,
    ModelPresetRow,
    PresetGrantRow,
    UserRow,
)
from citewell.errors import Conflict, InvalidInput, NotFoundError

PERMISSIONS = ("read", "write")
# What can be shared: the grant table and its column naming the shared thing.
_TABLES: dict[str, tuple[Any, Any]] = {
    "kb": (GrantRow, GrantRow.kb_id),
    "preset": (PresetGrantRow, PresetGrantRow.preset_id),
}
_OWNED: dict[str, Any] = {"kb": KnowledgeBaseRow, "preset": ModelPresetRow}
PUBLIC = "public"
NAMED = "name:"  # an inert grant to a name nobody had when it was made
# kind ('kb' | 'preset') -> (ids the user owns, (id, permission) granted to them)
Reach = dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]


class GroupNotFound(NotFoundError):
    code = "group_not_found"


@dataclass(frozen=True)
class Group:
    id: str
    name: str
    members: tuple[str, ...]  # user names


@dataclass(frozen=True)
class Grant:
    kb_id: str  # the KB's id, or the preset's for a preset grant
    principal: str  # 'user:<name>', 'group:<name>' or 'public', as callers write them
    permission: str


class GrantStore:
    def __init__(self, engine: Engine) -> None:
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._reads = read_sessions(engine)
        self._reach: ChangeCache[str, Reach] = ChangeCache(change_counter(engine))

    # --- what a caller may do ----------------------------------------------------------------
    def access(self, user: User, key: ApiKey | None = None) -> Access:
        if user.is_admin:
            return Access.of(user, key, (), ())
        return _reaching(user, key, self._reach.get(user.id, lambda: self._read_reach(user.id)))

    def held_access(self, user: User, key: ApiKey | None = None) -> Access | None:
        """``access`` from memory alone; None when the user's reach is not kept."""
        if user.is_admin:
            return Access.of(user, key, (), ())
        reach = self._reach.peek(user.id)
        return None if reach is None else _reaching(user, key, reach)

    def _read_reach(self, user_id: str) -> Reach:
        owned: dict[str, list[str]] = {"kb": [], "preset": []}
        granted: dict[str, list[tuple[str, str]]] = {"kb": [], "preset": []}
        with self._reads() as session:  # one statement: this runs on every request
            for kind, ident, permission in session.execute(_reach_query(user_id)):
                if permission is None:
                    owned[kind].append(ident)
                else:
                    granted[kind].append((ident, permission))
        return {kind: (tuple(owned[kind]), tuple(granted[kind])) for kind in owned}

    # --- grants ------------------------------------------------------------------------------
    def grant(
        self, kb_id: str, principal: str, permission: str, kind: str = "kb", by_name: bool = False
    ) -> Grant:
        """Give (or change) ``principal``'s access to the KB (``kind`` 'preset': to the model
        preset): 'user:NAME', 'group:NAME' or 'public'. ``by_name`` (a granter who may not
        list users and groups): a name nobody has is kept as an inert grant and answered like
        any other, so sharing tells nothing about who exists."""
        if permission not in PERMISSIONS:
            raise InvalidInput(f"permission must be one of {', '.join(PERMISSIONS)}.")
        stored = self._stored_principal(principal, by_name)
        table, target = _TABLES[kind]
        with self._sessions() as session, session.begin():
            session.merge(table(**{target.key: kb_id}, principal=stored, permission=permission))
        return Grant(kb_id, principal, permission)

    def revoke(self, kb_id: str, principal: str, kind: str = "kb", by_name: bool = False) -> None:
        stored = {self._stored_principal(principal, by_name)}
        if principal != PUBLIC:
            stored.add(NAMED + principal)  # and an inert grant made before the name existed
        table, target = _TABLES[kind]
        with self._sessions() as session, session.begin():
            session.execute(
                delete(table).where((target == kb_id) & table.principal.in_(sorted(stored)))
            )

    def decline(self, kb_id: str, user_id: str, kind: str = "kb") -> bool:
        """The grantee gives up a share made to them by name; False if there was none."""
        table, target = _TABLES[kind]
        with self._sessions() as session, session.begin():
            done = session.execute(
                delete(table).where((target == kb_id) & (table.principal == f"user:{user_id}"))
            )
        return bool(getattr(done, "rowcount", 0))

    def grants(self, kb_id: str, kind: str = "kb") -> list[Grant]:
        table, target = _TABLES[kind]
        with self._reads() as session:
            rows = session.scalars(
                select(table).where(target == kb_id).order_by(table.created_at)
            ).all()
            return [Grant(kb_id, self._shown(session, r.principal), r.permission) for r in rows]

    def _stored_principal(self, principal: str, by_name: bool = False) -> str:
        """'user:NAME' / 'group:NAME' → 'user:<id>' / 'group:<id>' (renames keep grants);
        with ``by_name``, a name nobody has → 'name:user:NAME' (matches no one)."""
        kind, _, name = principal.partition(":")
        if principal == PUBLIC:
            return PUBLIC
        if kind not in ("user", "group") or not name:
            raise InvalidInput(
                f"principal {principal!r} must be 'user:NAME', 'group:NAME' or 'public'."
            )
        with self._reads() as session:
            found = _principal_id(session, kind, name)
        if found is not None:
            return f"{kind}:{found}"
        if by_name:
            return NAMED + principal
        if kind == "user":
            raise NotFoundError(f"No user {name!r}; list them with GET /api/v1/users.")
        raise GroupNotFound(f"No group {name!r}; list them with GET /api/v1/groups.")

    def _shown(self, session: Session, stored: str) -> str:
        if stored.startswith(NAMED):
            return stored.removeprefix(NAMED)
        kind, _, ident = stored.partition(":")
        row: UserRow | GroupRow | None = None
        if kind == "user":
            row = session.get(UserRow, ident)
        elif kind == "group":
            row = session.get(GroupRow, ident)
        return f"{kind}:{row.name}" if row is not None else stored

    # --- groups ------------------------------------------------------------------------------
    def create_group(self, name: str) -> Group:
        if not name.strip():
            raise InvalidInput("A group needs a name.")
        try:
            with self._sessions() as session, session.begin():
                row = GroupRow(name=name.strip())
                session.add(row)
        except IntegrityError as exc:
            raise Conflict(f"A group named {name!r} exists; pick another name.") from exc
        return Group(row.id, row.name, ())

    def add_member(self, group: str, user_id: str) -> Group:
        with self._sessions() as session, session.begin():
            row = self._group_row(session, group)
            # An admin's membership: no provider's sign-in takes it away.
            session.merge(GroupMemberRow(group_id=row.id, user_id=user_id, via=""))
        return self.get_group(group)

    def remove_member(self, group: str, user_id: str) -> Group:
        with self._sessions() as session, session.begin():
            row = self._group_row(session, group)
            session.execute(
                delete(GroupMemberRow).where(
                    (GroupMemberRow.group_id == row.id) & (GroupMemberRow.user_id == user_id)
                )
            )
        return self.get_group(group)

    def delete_group(self, group: str) -> None:
        with self._sessions() as session, session.begin():
            row = self._group_row(session, group)
            session.execute(delete(GrantRow).where(GrantRow.principal == f"group:{row.id}"))
            session.delete(row)

    def get_group(self, group: str) -> Group:
        with self._reads() as session:
            return self._group(session, self._group_row(session, group))

    def list_groups(self) -> list[Group]:
        with self._reads() as session:
            rows = session.scalars(select(GroupRow).order_by(GroupRow.name)).all()
            return [self._group(session, r) for r in rows]

    def _group(self, session: Session, row: GroupRow) -> Group:
        names = session.scalars(
            select(UserRow.name)
            .join(GroupMemberRow, GroupMemberRow.user_id == UserRow.id)
            .where(GroupMemberRow.group_id == row.id)
            .order_by(UserRow.name)
        )
        return Group(row.id, row.name, tuple(names))

    def _group_row(self, session: Session, group: str) -> GroupRow:
        row = session.scalar(
            select(GroupRow).where((GroupRow.name == group) | (GroupRow.id == group))
        )
        if row is None:
            raise GroupNotFound(f"No group {group!r}; list them with GET /api/v1/groups.")
        return row


def _principal_id(session: Session, kind: str, name: str) -> str | None:
    """The id of the user or group with this name (or id), if there is one."""
    row = UserRow if kind == "user" else GroupRow
    return session.scalar(select(row.id).where((row.name == name) | (row.id == name)))


def _reach_query(user_id: str) -> Any:
    """(kind, id, permission) rows: what the user owns (permission NULL) and what is granted
    to them, to a group of theirs or to everyone, for KBs and model presets."""
    groups = select(literal("group:") + GroupMemberRow.group_id).where(
        GroupMemberRow.user_id == user_id
    )
    principals = [f"user:{user_id}", PUBLIC]
    parts = []
    for kind, owner in _OWNED.items():
        table, target = _TABLES[kind]
        parts.append(
            select(literal(kind), owner.id, null().label("permission")).where(
                owner.owner_id == user_id
            )
        )
        parts.append(
            select(literal(kind), target, table.permission).where(
                or_(table.principal.in_(principals), table.principal.in_(groups))
            )
        )
    return union_all(*parts)


def _reaching(user: User, key: ApiKey | None, reach: Reach) -> Access:
    return Access.of(user, key, *reach["kb"]).with_presets(*reach["preset"])
