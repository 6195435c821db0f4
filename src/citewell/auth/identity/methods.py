"""The sign-in methods a server offers, built once at start-up from the ``identity``
settings, and what lets a request in without a Citewell key: the trusted proxy's header
and the provider's access tokens."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from citewell.auth.access import Access
from citewell.auth.audit import AuditLog
from citewell.auth.identity.header import TrustedHeader
from citewell.auth.identity.ldap import LdapDirectory
from citewell.auth.identity.linking import IdentityLinker, Linked
from citewell.auth.identity.oidc import OidcClient
from citewell.auth.identity.store import IdentityStore
from citewell.auth.identity.types import ExternalIdentity
from citewell.auth.secrets import KEY_PREFIX
from citewell.auth.store import AuthStore
from citewell.config import IdentitySection
from citewell.errors import CitewellError

CALLBACK = "/api/v1/auth/oidc/callback"
HEADER_FRESH = 300.0  # seconds a proxy's person is trusted without a new look in the database
MAX_REMEMBERED = 10_000


@dataclass
class IdentityMethods:
    settings: IdentitySection
    store: IdentityStore
    linker: IdentityLinker
    ldap: LdapDirectory | None = None
    oidc: OidcClient | None = None
    header: TrustedHeader | None = None

    @property
    def password(self) -> bool:
        return self.settings.password_sign_in

    def close(self) -> None:
        if self.oidc is not None:
            self.oidc.close()


def identity_methods(
    settings: IdentitySection, public_url: str, users: AuthStore
) -> IdentityMethods:
    """The methods the settings turn on (a wrong setting fails the start, saying which)."""
    store = IdentityStore(users.engine)
    methods = IdentityMethods(settings, store, IdentityLinker(users, store, settings))
    if settings.ldap_url:
        methods.ldap = LdapDirectory(settings)
    if settings.oidc_issuer:
        redirect = settings.oidc_redirect_uri or public_url.rstrip("/") + CALLBACK
        methods.oidc = OidcClient(settings, redirect)
    if settings.trusted_header:
        methods.header = TrustedHeader(settings)
    return methods


class RecentPeople:
    """Who recently came through the proxy header or with an access token, by a digest of
    what they presented, until ``until``: spares the database a write on every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[str, float]] = {}

    @staticmethod
    def digest(*parts: str) -> str:
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()

    def get(self, digest: str) -> str | None:
        with self._lock:
            found = self._seen.get(digest)
        return found[0] if found is not None and found[1] > time.time() else None

    def put(self, digest: str, user_id: str, until: float) -> None:
        with self._lock:
            if len(self._seen) >= MAX_REMEMBERED:
                self._seen.clear()
            self._seen[digest] = (user_id, until)


def record_changes(audit: AuditLog, linked: Linked) -> None:
    """What a provider changed: the user made, their role, their groups."""
    actor = Access(linked.user, frozenset(), frozenset())
    user = linked.user
    if linked.created:
        audit.record(actor, "user.create", "user", user.id, name=user.name, via=linked.method)
    if linked.role_changed:
        audit.record(actor, "user.update", "user", user.id, role=user.role, via=linked.method)
    if linked.groups is not None and (linked.groups.added or linked.groups.removed):
        audit.record(
            actor,
            "user.groups",
            "user",
            user.id,
            added=list(linked.groups.added),
            removed=list(linked.groups.removed),
            via=linked.method,
        )


def record_sign_in(audit: AuditLog, linked: Linked) -> None:
    """The audit trail of one sign-in through a provider: its changes, then the sign-in
    itself with its method."""
    record_changes(audit, linked)
    actor = Access(linked.user, frozenset(), frozenset())
    audit.record(actor, "user.login", "user", linked.user.id, method=linked.method)


def _header_digest(identity: ExternalIdentity) -> str:
    return RecentPeople.digest(identity.method, identity.subject, ",".join(identity.groups))


def _token_digest(token: str) -> str:
    return RecentPeople.digest("token", token)


class KeylessAccess:
    """The user behind a trusted header or a provider's access token (None: neither).
    A sign-in is recorded when the person is looked up anew (at most every few minutes)."""

    def __init__(self, methods: IdentityMethods, audit: AuditLog) -> None:
        self.methods, self.audit = methods, audit
        self.recent = RecentPeople()

    def _has_header(self, headers: Mapping[str, str]) -> bool:
        header = self.methods.header
        return header is not None and header.header in headers

    def _is_token(self, plain: str | None) -> bool:
        """A bearer that is no Citewell key, where the provider's tokens are accepted."""
        accepted = self.methods.oidc is not None and self.methods.settings.oidc_access_tokens
        return accepted and bool(plain) and not str(plain).startswith(KEY_PREFIX)

    def applies(self, plain: str | None, headers: Mapping[str, str]) -> bool:
        """Whether this request comes through the proxy's header or with a provider token."""
        return self._has_header(headers) or self._is_token(plain)

    def held(self, plain: str | None, headers: Mapping[str, str], peer: str) -> str | None:
        """The user id of a person seen lately through the header or with this token, from
        memory alone (None: ask ``user_id``)."""
        if self._has_header(headers):
            try:
                identity = self.methods.header.identity(headers, peer)  # type: ignore[union-attr]
            except CitewellError:
                return None  # the full check refuses it, with its reason
            return None if identity is None else self.recent.get(_header_digest(identity))
        return self.recent.get(_token_digest(str(plain))) if self._is_token(plain) else None

    def user_id(self, plain: str | None, headers: Mapping[str, str], peer: str) -> str | None:
        """The user id behind the proxy's header, else behind the provider token (None:
        the request carries neither: an API key decides)."""
        header = self.methods.header
        identity = header.identity(headers, peer) if header is not None else None
        if identity is not None:
            return self._remembered(identity, _header_digest(identity))
        return self._from_token(str(plain)) if self._is_token(plain) else None

    def _from_token(self, token: str) -> str:
        digest = _token_digest(token)
        known = self.recent.get(digest)
        if known is not None:
            return known
        oidc = self.methods.oidc
        assert oidc is not None
        claims = oidc.verify_access_token(token)
        until = min(float(claims["exp"]), time.time() + HEADER_FRESH)
        return self._remembered(oidc.identity(claims), digest, until)

    def _remembered(self, identity: ExternalIdentity, digest: str, until: float = 0.0) -> str:
        known = self.recent.get(digest)
        if known is not None:
            return known
        linked = self.methods.linker.link(identity)
        record_sign_in(self.audit, linked)
        self.recent.put(digest, linked.user.id, until or time.time() + HEADER_FRESH)
        return linked.user.id
