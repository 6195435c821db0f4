"""Sharing a knowledge base or a model preset: who besides its owner may read or change it.
Its owner and admins list, set and remove shares; a user it was shared with by name may
decline it. Only admins learn whether a name exists (decision 0020)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from citewell.auth.access import Access
from citewell.auth.audit import AuditLog
from citewell.auth.grants import Grant, GrantStore
from citewell.errors import Conflict

NOT_BY_NAME = (
    "It is shared with you through a group or with everyone, not by your name; only its "
    "owner or an admin can remove that share."
)


@dataclass(frozen=True)
class Shareable:
    """One kind of shared thing, as the caller's view finds it."""

    kind: str  # the grant store's: "kb" or "preset"
    audited_as: str  # the audit log's: "knowledge_base" or "model"
    managed: Callable[[str], str]  # its id, if the caller may manage it (else it raises)
    readable: Callable[[str], tuple[str, bool]]  # its id and whether the caller manages it


class SharingService:
    def __init__(
        self, grants: GrantStore, audit: AuditLog, access: Access, what: Shareable
    ) -> None:
        self.store, self.audit, self.access, self.what = grants, audit, access, what

    def grants(self, ref: str) -> tuple[str, list[Grant]]:
        """The thing's id and its shares (its owner and admins)."""
        thing = self.what.managed(ref)
        return thing, self.store.grants(thing, kind=self.what.kind)

    def share(self, ref: str, principal: str, permission: str) -> tuple[str, Grant]:
        """Share it with 'user:NAME', 'group:NAME' or 'public'; again changes the permission."""
        thing = self.what.managed(ref)
        by_name = not self.access.is_admin
        grant = self.store.grant(thing, principal, permission, self.what.kind, by_name)
        self.audit.record(
            self.access,
            "grant.set",
            self.what.audited_as,
            thing,
            principal=grant.principal,
            permission=grant.permission,
        )
        return thing, grant

    def unshare(self, ref: str, principal: str) -> None:
        """Stop sharing it with ``principal``; or, as the user it was shared with by name,
        decline the share (a group's or everyone's share is the owner's to remove: 409)."""
        if self.access.is_named(principal):
            thing, manages = self.what.readable(ref)
            if not manages:
                if not self.store.decline(thing, self.access.user_id, kind=self.what.kind):
                    raise Conflict(NOT_BY_NAME)
                self.audit.record(self.access, "grant.decline", self.what.audited_as, thing)
                return
        thing = self.what.managed(ref)
        by_name = not self.access.is_admin
        self.store.revoke(thing, principal, self.what.kind, by_name=by_name)
        self.audit.record(
            self.access, "grant.revoke", self.what.audited_as, thing, principal=principal
        )
