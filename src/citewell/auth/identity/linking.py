"""From a provider's identity to a Citewell user: the link made at the first sign-in (or a
user made, where sign-up is on), the role from admin groups, the groups from the provider."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from citewell.auth.identity.store import GroupChange, IdentityStore
from citewell.auth.identity.types import ExternalIdentity, IdentityRefused, SignUpClosed
from citewell.auth.store import AuthStore, User
from citewell.config import IdentitySection
from citewell.errors import Conflict

log = logging.getLogger(__name__)


class IdentityConflict(Conflict):
    code = "identity_conflict"


@dataclass(frozen=True)
class Linked:
    method: str
    user: User
    created: bool  # the user was made at this sign-in
    groups: GroupChange | None  # None: group_management is off
    role_changed: bool


def group_names(groups: Iterable[str], settings: IdentitySection) -> list[str]:
    """The provider's groups as Citewell group names: mapped, or an LDAP DN's first value
    (cn=engineering,ou=groups,… → engineering), or as given."""
    names: list[str] = []
    for group in groups:
        name = settings.identity_group_map.get(group) or _first_value(group)
        if name and name not in names:
            names.append(name)
    return names


def _first_value(group: str) -> str:
    first = group.split(",", 1)[0]
    key, equals, value = first.partition("=")
    return value.strip() if equals and "," in group and key.strip().isalpha() else group.strip()


class IdentityLinker:
    def __init__(self, users: AuthStore, store: IdentityStore, settings: IdentitySection) -> None:
        self.users, self.store, self.settings = users, store, settings

    def link(self, identity: ExternalIdentity) -> Linked:
        """The user this identity signs in as, their role and groups brought up to date."""
        user_id = self.store.user_id_for(identity)
        created = False
        if user_id is None:
            user, created = self._first_sign_in(identity)
        else:
            user = self.users.get_user(user_id)
        if user.disabled:
            raise IdentityRefused("This Citewell account is disabled; ask an admin to enable it.")
        names = group_names(identity.groups, self.settings)
        changed = self._set_role(user, names)
        groups = None
        if self.settings.group_management:
            groups = self.store.set_groups(
                user.id, identity.method, names, self.settings.group_creation
            )
        return Linked(identity.method, self.users.get_user(user.id), created, groups, changed)

    def _first_sign_in(self, identity: ExternalIdentity) -> tuple[User, bool]:
        """Link to the password-less user an admin made under this name, or make one."""
        existing = self.users.find_user(identity.name)
        if existing is not None:
            # Never an account that signs in another way, nor an admin: a directory entry
            # that happens to be called 'admin' must not become the server's admin.
            taken = self.users.has_password(existing.id) or self.store.identities(existing.id)
            if taken or existing.is_admin:
                raise IdentityConflict(
                    f"A Citewell user named {identity.name!r} exists and signs in another way "
                    "(or is an admin, which a sign-in never takes over); an admin can rename "
                    "it so this sign-in makes its own, or use admin_groups for admins."
                )
            user, created = existing, False
        elif not self.settings.sign_up:
            raise SignUpClosed(
                f"{identity.name!r} has no Citewell account; ask an admin to make one "
                f"(`citewell user create {identity.name} --no-password`) or to turn sign_up on."
            )
        else:
            user, created = self.users.create_user(identity.name), True
        if not self.store.link(user.id, identity):  # another sign-in linked it just now
            linked = self.store.user_id_for(identity)
            user = self.users.get_user(linked) if linked else user
        return user, created

    def _set_role(self, user: User, names: list[str]) -> bool:
        admins = self.settings.admin_group_names()
        if not admins:
            return False
        role = "admin" if admins & set(names) else "user"
        if role == user.role:
            return False
        if user.is_admin and self.users.admin_count() <= 1:
            log.warning("%s left the admin groups but is the last admin: kept admin", user.name)
            return False
        self.users.update_user(user.id, role=role)
        return True
