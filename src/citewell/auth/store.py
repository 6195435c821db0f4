"""Users and API keys in the metadata database."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from citewell.auth.secrets import (
    MIN_PASSWORD,
    burn_verify,
    hash_password,
    key_digest,
    key_prefix,
    new_api_key,
    verify_password,
)
from citewell.db import ensure_schema
from citewell.db.changes import ChangeCache, change_counter
from citewell.db.engine import read_sessions
from citewell.db.models import ApiKeyRow, UserRow
from citewell.errors import Conflict, InvalidInput, NotFoundError

ROLES = ("admin", "user")
SIGN_IN = "sign-in"  # the name of the keys that signing in with a password gives
TOUCH_EVERY = 60.0  # seconds between writes of a key's last_used_at (not one write per request)


class UserNotFound(NotFoundError):
    code = "user_not_found"


class KeyNotFound(NotFoundError):
    code = "api_key_not_found"


@dataclass(frozen=True)
class User:
    id: str
    name: str
    role: str
    disabled: bool
    created_at: float

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


@dataclass(frozen=True)
class ApiKey:
    id: str
    user_id: str
    name: str
    prefix: str
    kb_ids: tuple[str, ...]  # empty: every KB its user may use
    read_only: bool
    created_at: float
    last_used_at: float
    revoked_at: float
    expires_at: float = 0.0  # 0: never (sign-in sessions expire)

    @property
    def revoked(self) -> bool:
        return self.revoked_at > 0

    def live(self, now: float) -> bool:
        return not self.revoked and (self.expires_at == 0 or now < self.expires_at)


def _user(row: UserRow) -> User:
    return User(row.id, row.name, row.role, bool(row.disabled), row.created_at)


def _key(row: ApiKeyRow) -> ApiKey:
    kb_ids = tuple(k for k in row.kb_ids.split(",") if k)
    return ApiKey(
        row.id,
        row.user_id,
        row.name,
        row.prefix,
        kb_ids,
        bool(row.read_only),
        row.created_at,
        row.last_used_at,
        row.revoked_at,
        row.expires_at,
    )


class AuthStore:
    def __init__(self, engine: Engine) -> None:
        ensure_schema(engine)
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._reads = read_sessions(engine)
        self._by_digest: ChangeCache[str, tuple[User, ApiKey] | None] = ChangeCache(
            change_counter(engine)
        )
        self._by_id: ChangeCache[str, User] = ChangeCache(change_counter(engine))

    # --- users ----------------------------------------------------------------------
    def create_user(self, name: str, password: str = "", role: str = "user") -> User:
        if role not in ROLES:
            raise InvalidInput(f"role must be one of {', '.join(ROLES)}.")
        if not name.strip():
            raise InvalidInput("A user needs a name.")
        if password and len(password) < MIN_PASSWORD:
            raise InvalidInput(f"Use a password of at least {MIN_PASSWORD} characters.")
        row = UserRow(
            name=name.strip(), role=role, password_hash=hash_password(password) if password else ""
        )
        try:
            with self._sessions() as session, session.begin():
                session.add(row)
        except IntegrityError as exc:
            raise Conflict(f"A user named {name!r} exists; pick another name.") from exc
        return _user(row)

    def get_user(self, name_or_id: str) -> User:
        with self._reads() as session:
            row = session.scalar(
                select(UserRow).where((UserRow.id == name_or_id) | (UserRow.name == name_or_id))
            )
            if row is None:
                raise UserNotFound(f"No user {name_or_id!r}; list them with `citewell user list`.")
            return _user(row)

    def kept_user(self, user_id: str) -> User:
        """``get_user`` by id, kept in memory until the users table changes (every request
        through a trusted proxy or with a provider's token asks)."""
        return self._by_id.get(user_id, lambda: self.get_user(user_id))

    def held_user(self, user_id: str) -> User | None:
        """``kept_user`` from memory alone (None: not kept)."""
        return self._by_id.peek(user_id)

    def find_user(self, name: str) -> User | None:
        """The user of this exact name, if there is one."""
        with self._reads() as session:
            row = session.scalar(select(UserRow).where(UserRow.name == name))
            return None if row is None else _user(row)

    def has_password(self, user_id: str) -> bool:
        with self._reads() as session:
            return bool(session.scalar(select(UserRow.password_hash).where(UserRow.id == user_id)))

    def list_users(self) -> list[User]:
        with self._reads() as session:
            return [_user(r) for r in session.scalars(select(UserRow).order_by(UserRow.name))]

    def admin_count(self) -> int:
        with self._reads() as session:
            query = select(func.count()).select_from(UserRow).where(UserRow.role == "admin")
            return int(session.scalar(query) or 0)

    def authenticate(self, name: str, password: str) -> User | None:
        """The user if the name and password match and the account is enabled."""
        with self._reads() as session:
            row = session.scalar(select(UserRow).where(UserRow.name == name))
        if row is None or not row.password_hash:
            burn_verify(password)
            return None
        if not verify_password(row.password_hash, password) or row.disabled:
            return None
        return _user(row)

    # --- API keys -------------------------------------------------------------------
    def create_key(
        self,
        user_id: str,
        name: str = "",
        kb_ids: Sequence[str] = (),
        read_only: bool = False,
        expires_at: float = 0.0,
        max_live: int = 0,
    ) -> tuple[ApiKey, str]:
        """A new key for the user: the record, and the key itself (shown once, never kept).
        ``max_live`` (0: any number): the live keys a user may hold. A sign-in at the cap
        revokes the user's oldest sign-in key; any other new key is refused."""
        user = self.get_user(user_id)
        plain = new_api_key()
        now = time.time()
        row = ApiKeyRow(
            user_id=user.id,
            name=name,
            prefix=key_prefix(plain),
            digest=key_digest(plain),
            kb_ids=",".join(kb_ids),
            read_only=int(read_only),
            created_at=now,
            expires_at=expires_at,
        )
        with self._sessions() as session, session.begin():
            if max_live:
                _make_room(session, user.id, name == SIGN_IN, max_live, now)
            session.add(row)
        return _key(row), plain

    def identify(self, plain: str) -> tuple[User, ApiKey] | None:
        """Whose key this is, if it is a live key of an enabled user."""
        now = time.time()
        digest = key_digest(plain)
        found = _usable(self._by_digest.get(digest, lambda: self._pair(digest)), now)
        if found is not None and now - found[1].last_used_at > TOUCH_EVERY:
            self._touch(found[1].id, now)
        return found

    def held_identity(self, plain: str) -> tuple[User, ApiKey] | None:
        """``identify`` from memory alone: None unless the key is known, live, its user
        enabled and nothing needs writing (then ``identify`` decides, off the event loop)."""
        now = time.time()
        found = _usable(self._by_digest.peek(key_digest(plain)), now)
        return None if found is None or now - found[1].last_used_at > TOUCH_EVERY else found

    def _pair(self, digest: str) -> tuple[User, ApiKey] | None:
        query = (
            select(ApiKeyRow, UserRow)
            .join(UserRow, UserRow.id == ApiKeyRow.user_id)
            .where(ApiKeyRow.digest == digest)
        )
        with self._reads() as session:  # one statement: this runs on every request
            pair = session.execute(query).first()
            return None if pair is None else (_user(pair[1]), _key(pair[0]))

    def _touch(self, key_id: str, now: float) -> None:
        with self._sessions() as session, session.begin():
            session.execute(
                update(ApiKeyRow).where(ApiKeyRow.id == key_id).values(last_used_at=now)
            )

    def update_user(
        self, name_or_id: str, disabled: bool | None = None, role: str | None = None
    ) -> User:
        if role is not None and role not in ROLES:
            raise InvalidInput(f"role must be one of {', '.join(ROLES)}.")
        user = self.get_user(name_or_id)
        with self._sessions() as session, session.begin():
            row = session.get(UserRow, user.id)
            assert row is not None
            if disabled is not None:
                row.disabled = int(disabled)
            if role is not None:
                row.role = role
        return self.get_user(user.id)

    def set_password(self, name_or_id: str, password: str) -> None:
        if len(password) < MIN_PASSWORD:
            raise InvalidInput(f"Use a password of at least {MIN_PASSWORD} characters.")
        user = self.get_user(name_or_id)
        with self._sessions() as session, session.begin():
            session.execute(
                update(UserRow)
                .where(UserRow.id == user.id)
                .values(password_hash=hash_password(password))
            )

    def get_key(self, key_id: str) -> ApiKey:
        with self._reads() as session:
            row = session.get(ApiKeyRow, key_id)
        if row is None:
            raise KeyNotFound(f"No API key {key_id!r}; list them with `citewell key list`.")
        return _key(row)

    def list_keys(self, user_id: str | None = None) -> list[ApiKey]:
        query = select(ApiKeyRow).order_by(ApiKeyRow.created_at)
        if user_id is not None:
            query = query.where(ApiKeyRow.user_id == user_id)
        with self._reads() as session:
            return [_key(r) for r in session.scalars(query)]

    def revoke_key(self, key_id: str) -> ApiKey:
        with self._sessions() as session, session.begin():
            session.execute(
                update(ApiKeyRow)
                .where((ApiKeyRow.id == key_id) & (ApiKeyRow.revoked_at == 0.0))
                .values(revoked_at=time.time())
            )
            row = session.get(ApiKeyRow, key_id)
        if row is None:
            raise KeyNotFound(f"No API key {key_id!r}; list them with `citewell key list`.")
        return _key(row)


def _make_room(session: Session, user_id: str, signing_in: bool, max_live: int, now: float) -> None:
    """Keep a user's live keys under ``max_live``: a sign-in retires their oldest sign-in
    keys; a key made any other way is refused."""
    live = (
        (ApiKeyRow.user_id == user_id)
        & (ApiKeyRow.revoked_at == 0.0)
        & ((ApiKeyRow.expires_at == 0.0) | (ApiKeyRow.expires_at > now))
    )
    count = int(session.scalar(select(func.count()).select_from(ApiKeyRow).where(live)) or 0)
    if count < max_live:
        return
    if not signing_in:
        raise Conflict(
            f"You hold {count} live API keys, the most one user may (max_keys_per_user); "
            "revoke one you no longer use with DELETE /api/v1/auth/keys/{id} and retry."
        )
    oldest = select(ApiKeyRow.id).where(live & (ApiKeyRow.name == SIGN_IN))
    oldest = oldest.order_by(ApiKeyRow.created_at).limit(count - max_live + 1)
    retired = list(session.scalars(oldest))
    session.execute(update(ApiKeyRow).where(ApiKeyRow.id.in_(retired)).values(revoked_at=now))


def _usable(found: tuple[User, ApiKey] | None, now: float) -> tuple[User, ApiKey] | None:
    """The pair if its key is live and its user enabled."""
    if found is None or not found[1].live(now) or found[0].disabled:
        return None
    return found
