"""What one caller may read and change: worked out once per request from the user, the key and
the grants, then applied as a filter inside every chunk-store query (``where``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from citewell.auth.store import ApiKey, User
from citewell.catalog import KnowledgeBase
from citewell.types import ChunkFilter


@dataclass(frozen=True)
class Access:
    """``readable``/``writable``: KB ids, or None for every KB (admins, and everyone when
    authentication is off). ``scope``: the KBs the API key is limited to (None: no limit)."""

    user: User | None  # None: authentication is off, or library/CLI code on the data dir
    readable: frozenset[str] | None
    writable: frozenset[str] | None
    scope: frozenset[str] | None = None
    read_only: bool = False
    key: ApiKey | None = None
    # Model presets kept in the database: ids this caller may use / change (None: all).
    presets: frozenset[str] | None = None
    presets_writable: frozenset[str] | None = None

    @classmethod
    def everything(cls) -> Access:
        """The local operator: the CLI, library code, and the server with auth=none."""
        return cls(None, None, None)

    @classmethod
    def of(
        cls,
        user: User,
        key: ApiKey | None,
        owned: Iterable[str],
        grants: Iterable[tuple[str, str]],
    ) -> Access:
        """``grants``: (kb id, 'read' | 'write') that reach the user directly, through a group
        or as public. Admins read and write every KB; a key narrows both."""
        scope = frozenset(key.kb_ids) if key is not None and key.kb_ids else None
        read_only = bool(key and key.read_only)
        if user.is_admin:
            readable = writable = scope
        else:
            mine, granted = set(owned), list(grants)
            readable = frozenset(mine | {kb for kb, _ in granted})
            writable = frozenset(mine | {kb for kb, perm in granted if perm == "write"})
            if scope is not None:
                readable, writable = readable & scope, writable & scope
        if read_only:
            writable = frozenset()
        return cls(user, readable, writable, scope, read_only, key)

    def with_presets(self, owned: Iterable[str], grants: Iterable[tuple[str, str]]) -> Access:
        """This access with the presets the user owns or was granted (admins: all)."""
        if self.user is not None and self.user.is_admin:
            return replace(self, presets_writable=frozenset() if self.read_only else None)
        mine, granted = set(owned), list(grants)
        usable = frozenset(mine | {p for p, _ in granted})
        writable = frozenset(mine | {p for p, perm in granted if perm == "write"})
        return replace(
            self, presets=usable, presets_writable=frozenset() if self.read_only else writable
        )

    def can_use_preset(self, preset_id: str) -> bool:
        return self.presets is None or preset_id in self.presets

    def can_change_preset(self, preset_id: str) -> bool:
        if self.read_only:
            return False
        return self.presets_writable is None or preset_id in self.presets_writable

    @property
    def user_id(self) -> str:
        return self.user.id if self.user is not None else ""

    @property
    def name(self) -> str:
        return self.user.name if self.user is not None else "local"

    @property
    def is_admin(self) -> bool:
        return self.user is None or self.user.is_admin

    def is_named(self, principal: str) -> bool:
        """'user:NAME' or 'user:ID' naming this caller themselves."""
        kind, _, who = principal.partition(":")
        user = self.user
        return kind == "user" and user is not None and who in (user.name, user.id)

    # --- the filter every chunk read goes through ------------------------------------------
    def where(self, where: ChunkFilter) -> ChunkFilter:
        """``where`` narrowed to the KBs this caller may read: a file filter stays a file
        filter, and only the file's chunks in readable KBs match."""
        if self.readable is None:
            return where
        if where.kb_ids is None:
            kb_ids = tuple(sorted(self.readable))
        else:
            kb_ids = tuple(k for k in where.kb_ids if k in self.readable)
        return ChunkFilter(kb_ids=kb_ids, file_ids=where.file_ids)

    # --- single KBs --------------------------------------------------------------------------
    def can_read(self, kb: KnowledgeBase | str) -> bool:
        kb_id = kb if isinstance(kb, str) else kb.id
        if self.readable is None or kb_id in self.readable:
            return True
        return not isinstance(kb, str) and self._owns(kb) and self._in_scope(kb.id)

    def can_write(self, kb: KnowledgeBase) -> bool:
        if self.read_only or not self._in_scope(kb.id):
            return False
        return self.writable is None or kb.id in self.writable or self._owns(kb)

    def can_manage(self, kb: KnowledgeBase) -> bool:
        """Delete the KB and share it: its owner and admins."""
        if self.read_only or not self._in_scope(kb.id):
            return False
        return self.is_admin or self._owns(kb)

    def can_create(self) -> bool:
        """A key limited to some KBs or to reading cannot make new ones."""
        return not self.read_only and self.scope is None

    def including(self, kb: KnowledgeBase) -> Access:
        """This access plus a KB the caller just made (owners read and write their KBs)."""
        if self.readable is None or kb.id in self.readable or not self._owns(kb):
            return self
        writable = self.writable if self.writable is None else self.writable | {kb.id}
        return replace(self, readable=self.readable | {kb.id}, writable=writable)

    def _owns(self, kb: KnowledgeBase) -> bool:
        return self.user is not None and kb.owner_id == self.user.id

    def _in_scope(self, kb_id: str) -> bool:
        return self.scope is None or kb_id in self.scope
