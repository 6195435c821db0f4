"""Identities linked to users, the groups providers gave them, and OIDC sign-ins in flight,
in the metadata database (so every server process sees the same)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from citewell.auth.identity.types import ExternalIdentity
from citewell.db import ensure_schema
from citewell.db.models import GroupMemberRow, GroupRow, IdentityRow, SignInStateRow


@dataclass(frozen=True)
class LinkedIdentity:
    user_id: str
    method: str
    issuer: str
    subject: str
    email: str
    last_seen_at: float


@dataclass(frozen=True)
class GroupChange:
    added: tuple[str, ...]
    removed: tuple[str, ...]


def _linked(row: IdentityRow) -> LinkedIdentity:
    return LinkedIdentity(
        row.user_id, row.method, row.issuer, row.subject, row.email, row.last_seen_at
    )


class IdentityStore:
    def __init__(self, engine: Engine) -> None:
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    # --- identities ---------------------------------------------------------------------
    def user_id_for(self, identity: ExternalIdentity) -> str | None:
        """The user this identity signs in as (and notes it was seen), if it is linked."""
        match = (
            (IdentityRow.method == identity.method)
            & (IdentityRow.issuer == identity.issuer)
            & (IdentityRow.subject == identity.subject)
        )
        with self._sessions() as session, session.begin():
            row = session.scalar(select(IdentityRow).where(match))
            if row is None:
                return None
            row.last_seen_at, row.email = time.time(), identity.email or row.email
            return row.user_id

    def link(self, user_id: str, identity: ExternalIdentity) -> bool:
        """Link the identity to the user; False if another process linked it first."""
        row = IdentityRow(
            user_id=user_id,
            method=identity.method,
            issuer=identity.issuer,
            subject=identity.subject,
            email=identity.email,
        )
        try:
            with self._sessions() as session, session.begin():
                session.add(row)
        except IntegrityError:
            return False
        return True

    def identities(self, user_id: str | None = None, method: str = "") -> list[LinkedIdentity]:
        query = select(IdentityRow).order_by(IdentityRow.created_at)
        if user_id is not None:
            query = query.where(IdentityRow.user_id == user_id)
        if method:
            query = query.where(IdentityRow.method == method)
        with self._sessions() as session:
            return [_linked(r) for r in session.scalars(query)]

    # --- groups a provider gave -----------------------------------------------------------
    def set_groups(self, user_id: str, via: str, names: Iterable[str], create: bool) -> GroupChange:
        """Make the memberships ``via`` a provider gave the user exactly ``names`` (groups
        with no Citewell group are made when ``create``, else left out). Memberships an
        admin made are neither removed nor marked."""
        wanted = set(names)
        with self._sessions() as session, session.begin():
            groups = {g.name: g.id for g in session.scalars(select(GroupRow))}
            if create:
                for name in sorted(wanted - set(groups)):
                    groups[name] = _new_group(session, name)
            wanted_ids = {groups[n] for n in wanted if n in groups}
            held = {
                m.group_id: m.via
                for m in session.scalars(
                    select(GroupMemberRow).where(GroupMemberRow.user_id == user_id)
                )
            }
            gone = [g for g, v in held.items() if v == via and g not in wanted_ids]
            new = [g for g in wanted_ids if g not in held]
            _apply(session, user_id, via, new, gone)
        by_id = {v: k for k, v in groups.items()}
        return GroupChange(
            tuple(sorted(by_id[g] for g in new)), tuple(sorted(by_id.get(g, g) for g in gone))
        )

    # --- OIDC sign-ins in flight ----------------------------------------------------------
    def put_state(self, key: str, kind: str, data: dict[str, Any], lifetime: float) -> None:
        now = time.time()
        with self._sessions() as session, session.begin():
            session.execute(delete(SignInStateRow).where(SignInStateRow.expires_at < now))
            row = SignInStateRow(
                id=key, kind=kind, data=json.dumps(data), expires_at=now + lifetime
            )
            session.add(row)

    def take_state(self, key: str, kind: str) -> dict[str, Any] | None:
        """The data put under ``key`` if it is there and fresh; gone after (one use only:
        of two takers at once, one gets it)."""
        match = (
            (SignInStateRow.id == key)
            & (SignInStateRow.kind == kind)
            & (SignInStateRow.expires_at >= time.time())
        )
        with self._sessions() as session, session.begin():
            row = session.scalar(select(SignInStateRow).where(match))
            if row is None:
                return None
            taken = session.execute(delete(SignInStateRow).where(match))
            if getattr(taken, "rowcount", 0) != 1:
                return None
            data: dict[str, Any] = json.loads(row.data)
            return data


def _new_group(session: Session, name: str) -> str:
    found = session.scalar(select(GroupRow.id).where(GroupRow.name == name))
    if found is not None:
        return found
    row = GroupRow(name=name)
    session.add(row)
    session.flush()
    return row.id


def _apply(session: Session, user_id: str, via: str, new: list[str], gone: list[str]) -> None:
    for group_id in new:
        session.add(GroupMemberRow(group_id=group_id, user_id=user_id, via=via))
    if gone:
        session.execute(
            delete(GroupMemberRow).where(
                (GroupMemberRow.user_id == user_id) & GroupMemberRow.group_id.in_(gone)
            )
        )
