"""Signing in against an LDAP directory or Active Directory (``ldap3``): find the person's
DN with the service account (the name escaped into the filter), bind as them with their
password over LDAPS or StartTLS, and read their groups from memberOf or a group search."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from citewell.auth.identity.types import ExternalIdentity, IdentityRefused
from citewell.config import IdentitySection
from citewell.errors import CitewellError, ConfigError

TIMEOUT = 10  # seconds to connect and to wait for an answer


class DirectoryUnavailable(CitewellError):
    status = 502
    code = "directory_unavailable"


@dataclass(frozen=True)
class Entry:
    dn: str
    name: str
    email: str
    groups: tuple[str, ...]


class LdapDirectory:
    def __init__(self, settings: IdentitySection) -> None:
        import ldap3

        self.settings = settings
        url = settings.ldap_url
        self.ldaps = url.lower().startswith("ldaps://")
        self.start_tls = not self.ldaps and settings.ldap_start_tls
        if not (self.ldaps or self.start_tls or settings.ldap_allow_plain):
            raise ConfigError(
                "ldap_url is ldap:// without StartTLS: passwords would cross the network in "
                "the clear. Use ldaps://, turn ldap_start_tls on, or (tests only) "
                "ldap_allow_plain."
            )
        if not settings.ldap_bind_dn and not settings.ldap_allow_anonymous:
            raise ConfigError(
                "LDAP sign-in needs a service account to search with (ldap_bind_dn, "
                "ldap_bind_password), or ldap_allow_anonymous where the directory allows it."
            )
        _check_filters(settings)
        tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=settings.ldap_ca_file or None)
        self.server = ldap3.Server(url, use_ssl=self.ldaps, tls=tls, connect_timeout=TIMEOUT)

    @property
    def issuer(self) -> str:
        # The directory, not its address: moving to another server keeps people's links.
        return self.settings.ldap_search_base.lower()

    def authenticate(self, name: str, password: str) -> ExternalIdentity:
        """The person if the name is found and the password binds; IdentityRefused if not
        (the same answer for an unknown name and a wrong password)."""
        if not name or not password:  # an empty password is an anonymous bind: never a sign-in
            raise IdentityRefused("Wrong name or password.")
        entry = self.find(name)
        # An unknown name binds too (as a DN nobody has), so the answer takes as long as
        # for a wrong password and does not tell which names the directory holds.
        dn = (
            entry.dn if entry is not None else f"cn=no-such-person,{self.settings.ldap_search_base}"
        )
        if not self._binds(dn, password) or entry is None:
            raise IdentityRefused("Wrong name or password.")
        return self._identity(entry)

    def lookup(self, dn: str) -> ExternalIdentity | None:
        """The person at ``dn`` as the directory has them now (for a sync): None when the
        entry is gone or no longer matches ldap_search_filter (disabled, moved out)."""
        import ldap3

        s = self.settings
        attributes = [s.ldap_username_attribute, s.ldap_email_attribute]
        if not s.ldap_group_filter:
            attributes.append(s.ldap_groups_attribute)
        connection = self._service()
        try:
            connection.search(dn, s.ldap_search_filter, ldap3.BASE, attributes=attributes)
            found = [r for r in connection.response or [] if r.get("type") == "searchResEntry"]
            return self._identity(self._entry(connection, found[0])) if found else None
        finally:
            connection.unbind()

    def find(self, name: str) -> Entry | None:
        from ldap3.utils.conv import escape_filter_chars

        s = self.settings
        query = (
            f"(&{s.ldap_search_filter}({s.ldap_username_attribute}={escape_filter_chars(name)}))"
        )
        attributes = [s.ldap_username_attribute, s.ldap_email_attribute]
        if not s.ldap_group_filter:
            attributes.append(s.ldap_groups_attribute)
        connection = self._service()
        try:
            connection.search(s.ldap_search_base, query, attributes=attributes, size_limit=2)
            found = list(connection.response or [])
            people = [r for r in found if r.get("type") == "searchResEntry"]
            if len(people) != 1:  # none, or a name two entries share: no sign-in
                return None
            return self._entry(connection, people[0])
        finally:
            connection.unbind()

    def _entry(self, connection: Any, found: dict[str, Any]) -> Entry:
        s = self.settings
        attributes = found.get("attributes", {})
        name = _one(attributes.get(s.ldap_username_attribute))
        if s.ldap_group_filter:
            groups = self._group_search(connection, found["dn"])
        else:
            groups = tuple(str(g) for g in _many(attributes.get(s.ldap_groups_attribute)))
        return Entry(found["dn"], name, _one(attributes.get(s.ldap_email_attribute)), groups)

    def _group_search(self, connection: Any, dn: str) -> tuple[str, ...]:
        from ldap3.utils.conv import escape_filter_chars

        s = self.settings
        query = s.ldap_group_filter.replace("{dn}", escape_filter_chars(dn))
        connection.search(s.ldap_group_base or s.ldap_search_base, query, attributes=["cn"])
        return tuple(
            r["dn"] for r in connection.response or [] if r.get("type") == "searchResEntry"
        )

    def _identity(self, entry: Entry) -> ExternalIdentity:
        return ExternalIdentity(
            "ldap", self.issuer, entry.dn.lower(), entry.name, entry.email, entry.groups
        )

    def _connection(self, user: str | None, password: str | None) -> Any:
        import ldap3

        connection = ldap3.Connection(
            self.server,
            user=user,
            password=password,
            receive_timeout=TIMEOUT,
            raise_exceptions=False,
        )
        try:
            connection.open()
            if self.start_tls and not connection.start_tls():
                raise DirectoryUnavailable("The directory refused StartTLS; check ldap_url.")
        except ldap3.core.exceptions.LDAPException as exc:
            raise DirectoryUnavailable(
                f"Cannot reach the directory at {self.settings.ldap_url} over TLS ({exc}); check "
                "ldap_url and ldap_ca_file, then retry."
            ) from exc
        return connection

    def _service(self) -> Any:
        s = self.settings
        connection = self._connection(s.ldap_bind_dn or None, s.ldap_bind_password or None)
        if not connection.bind():
            connection.unbind()
            raise DirectoryUnavailable(
                "The directory refused Citewell's service account; check ldap_bind_dn and "
                "ldap_bind_password."
            )
        return connection

    def _binds(self, dn: str, password: str) -> bool:
        connection = self._connection(dn, password)
        try:
            return bool(connection.bind())
        finally:
            connection.unbind()


def _check_filters(settings: IdentitySection) -> None:
    """A filter the directory would refuse fails the start, not each sign-in."""
    from ldap3.core.exceptions import LDAPInvalidFilterError
    from ldap3.operation.search import parse_filter

    filters = {
        "ldap_search_filter": f"(&{settings.ldap_search_filter}(uid=x))",
        "ldap_group_filter": settings.ldap_group_filter.replace("{dn}", "cn=x"),
    }
    for name, text in filters.items():
        if not text:
            continue
        try:
            parse_filter(text, None, True, True, None, False)
        except LDAPInvalidFilterError as exc:
            raise ConfigError(
                f"{name} is not a valid LDAP filter ({text!r}); write it like "
                "(objectClass=person), parentheses balanced."
            ) from exc


def _one(value: Any) -> str:
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return "" if value is None else str(value)


def _many(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
