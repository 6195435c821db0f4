"""Users, groups and API keys, as one caller may see and change them: admins manage users
and groups; everyone manages their own keys (admins may revoke anyone's).
Every operation checks the caller's access itself and writes the audit log."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from citewell.auth.access import Access
from citewell.auth.audit import AuditLog
from citewell.auth.grants import GrantStore, Group
from citewell.auth.store import ApiKey, AuthStore, KeyNotFound, User
from citewell.config import AccessSection
from citewell.errors import ConfigError, Forbidden, InvalidInput


def require_admin(access: Access) -> Access:
    """``access`` if it may do admin work: an admin's key limited to nothing."""
    if not access.is_admin:
        raise Forbidden("Only admins may do this; ask one, or use an admin's API key.")
    if access.scope is not None or access.read_only:
        raise Forbidden(
            "This API key is limited (to some KBs or to reading); admin work needs an "
            "unlimited admin key."
        )
    return access


class AccountService:
    """Everything else here, for one caller (``access``)."""

    def __init__(
        self,
        users: AuthStore,
        grants: GrantStore,
        audit: AuditLog,
        settings: AccessSection,
        access: Access,
    ) -> None:
        self.users, self.grants, self.audit = users, grants, audit
        self.settings = settings
        self.access = access

    # --- one's own keys -----------------------------------------------------------------
    def own_keys(self) -> list[ApiKey]:
        """The caller's keys (never the keys themselves)."""
        if self.access.user is None:
            return []
        return self.users.list_keys(self.access.user.id)

    def create_key(
        self, name: str, kbs: Sequence[str], read_only: bool, kb_id: Callable[[str], str]
    ) -> tuple[ApiKey, str]:
        """A new key for the caller, limited to ``kbs`` (names or ids, found by ``kb_id``:
        the caller's view, which answers 404 for a KB they may not read) and to reading if
        asked; the plain key is returned once."""
        access = self.access
        if access.user is None:
            raise ConfigError("The server runs with auth=none: there are no users to own keys.")
        if access.read_only:
            raise Forbidden("A read-only key cannot make keys; use a full key or sign in.")
        kb_ids = [kb_id(kb) for kb in kbs]
        if access.scope is not None and not (kb_ids and set(kb_ids) <= access.scope):
            raise Forbidden("A key limited to some KBs can only make keys limited to those KBs.")
        key, plain = self.users.create_key(
            access.user.id, name, kb_ids, read_only, max_live=self.settings.max_keys_per_user
        )
        self.audit.record(access, "key.create", "api_key", key.id, name=key.name)
        return key, plain

    def revoke_key(self, key_id: str) -> ApiKey:
        """Revoke one of the caller's keys (admins: anyone's); another's answers as missing."""
        access = self.access
        missing = f"No API key {key_id!r}; GET /api/v1/auth/keys (`citewell key list`) lists yours."
        try:
            key = self.users.get_key(key_id)
        except KeyNotFound:  # the same words as for another's key: nothing tells them apart
            raise KeyNotFound(missing) from None
        own = access.user is not None and key.user_id == access.user.id
        if not (own or access.is_admin):
            raise KeyNotFound(missing)
        self.users.revoke_key(key.id)
        self.audit.record(access, "key.revoke", "api_key", key.id)
        return key

    # --- anyone's keys (admins) -------------------------------------------------------------
    def keys(self, user: str | None = None) -> list[ApiKey]:
        """Every key, or one user's (never the keys themselves)."""
        require_admin(self.access)
        return self.users.list_keys(self.users.get_user(user).id if user else None)

    def create_key_for(
        self, user: str, name: str, kb_ids: Sequence[str], read_only: bool
    ) -> tuple[ApiKey, str]:
        """A key for another user (the plain key returned once)."""
        require_admin(self.access)
        owner = self.users.get_user(user)
        key, plain = self.users.create_key(owner.id, name, list(kb_ids), read_only)
        self.audit.record(self.access, "key.create", "api_key", key.id, user=owner.name, name=name)
        return key, plain

    # --- users (admins) -----------------------------------------------------------------
    def list_users(self) -> list[User]:
        require_admin(self.access)
        return self.users.list_users()

    def get_user(self, user: str) -> User:
        require_admin(self.access)
        return self.users.get_user(user)

    def create_user(self, name: str, password: str, role: str) -> User:
        require_admin(self.access)
        user = self.users.create_user(name, password, role)
        self.audit.record(self.access, "user.create", "user", user.id, name=user.name, role=role)
        return user

    def update_user(
        self, user: str, disabled: bool | None, role: str | None, password: str | None
    ) -> User:
        """Disable or enable a user, change the role or set a password; the last enabled
        admin cannot be demoted or disabled."""
        require_admin(self.access)
        target = self.users.get_user(user)
        demoting = target.is_admin and (disabled or role == "user")
        if demoting and self.users.admin_count() <= 1:
            raise InvalidInput("That is the last admin; make another admin first.")
        if password is not None:
            self.users.set_password(target.id, password)
        updated = self.users.update_user(target.id, disabled, role)
        changes = {k: v for k, v in (("disabled", disabled), ("role", role)) if v is not None}
        self.audit.record(
            self.access, "user.update", "user", target.id, **changes, password=password is not None
        )
        return updated

    # --- groups (admins) ----------------------------------------------------------------
    def list_groups(self) -> list[Group]:
        require_admin(self.access)
        return self.grants.list_groups()

    def create_group(self, name: str) -> Group:
        require_admin(self.access)
        group = self.grants.create_group(name)
        self.audit.record(self.access, "group.create", "group", group.id, name=group.name)
        return group

    def add_member(self, group: str, user: str) -> Group:
        require_admin(self.access)
        member = self.users.get_user(user)
        updated = self.grants.add_member(group, member.id)
        self.audit.record(self.access, "group.add_member", "group", updated.id, user=member.name)
        return updated

    def remove_member(self, group: str, user: str) -> Group:
        require_admin(self.access)
        member = self.users.get_user(user)
        updated = self.grants.remove_member(group, member.id)
        self.audit.record(self.access, "group.remove_member", "group", updated.id, user=member.name)
        return updated

    def delete_group(self, group: str) -> None:
        """Delete the group and every grant to it."""
        require_admin(self.access)
        found = self.grants.get_group(group)
        self.grants.delete_group(found.id)
        self.audit.record(self.access, "group.delete", "group", found.id, name=found.name)
