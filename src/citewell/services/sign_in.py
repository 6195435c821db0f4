"""Signing in: the operations open to callers without a key. With a Citewell password, with
an LDAP password, or through an OpenID provider (the browser leaves for the provider, comes
back to the callback, and the page trades a one-time ticket for its key). Every sign-in
gives a key that expires after session_hours, and is written to the audit trail with its
method."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from citewell.auth.access import Access
from citewell.auth.audit import AuditLog
from citewell.auth.grants import GrantStore
from citewell.auth.identity.linking import Linked
from citewell.auth.identity.methods import IdentityMethods, record_sign_in
from citewell.auth.identity.oidc import OidcClient
from citewell.auth.identity.types import IdentityRefused
from citewell.auth.store import SIGN_IN, ApiKey, AuthStore, User
from citewell.config import AccessSection
from citewell.errors import ConfigError, Forbidden, InvalidInput

STATE_LIFETIME = 600.0  # seconds a person has at the provider's login page
TICKET_LIFETIME = 60.0  # seconds the page has to trade its ticket for a key
DEFAULT_RETURN = "/#/kbs"


@dataclass(frozen=True)
class SignedIn:
    user: User
    key: ApiKey
    plain: str  # the key itself: in this answer only
    expires_at: float


@dataclass(frozen=True)
class MethodsPublic:
    password: bool
    ldap: bool
    oidc: str  # the provider's name on the button; "" when off
    header: bool


def safe_return(return_to: str) -> str:
    """``return_to`` if it is a place on this server's page ('/#/kbs', '#/chat'); anything
    that could lead elsewhere ('//evil.example', 'https://…', '/\\\\host') is refused."""
    target = return_to or DEFAULT_RETURN
    if target.startswith("#/"):
        target = "/" + target
    bad = not target.startswith("/") or target.startswith("//") or "\\" in target
    if bad or any(ord(c) < 32 for c in target):
        raise InvalidInput("return_to must be a place on Citewell's own page, like /#/kbs.")
    return target


class SignInService:
    def __init__(
        self,
        users: AuthStore,
        grants: GrantStore,
        audit: AuditLog,
        settings: AccessSection,
        methods: IdentityMethods,
    ) -> None:
        self.users, self.grants, self.audit = users, grants, audit
        self.settings, self.methods = settings, methods

    def require_sign_in(self) -> None:
        """Refuse at once where there is no signing in (auth=none)."""
        if self.settings.auth != "required":
            raise ConfigError("The server runs with auth=none: no sign-in needed (nor possible).")

    def offered(self) -> MethodsPublic:
        m = self.methods
        name = m.settings.oidc_provider_name if m.oidc is not None else ""
        return MethodsPublic(m.password, m.ldap is not None, name, m.header is not None)

    # --- passwords: Citewell's own, or the directory's -------------------------------------
    def sign_in(self, name: str, password: str) -> SignedIn | None:
        """A key, or None for a wrong name or password (the caller counts the failure)."""
        self.require_sign_in()
        if not self.methods.password:
            raise Forbidden(
                "Signing in with a Citewell password is turned off here; sign in with "
                f"{self._others()} instead."
            )
        user = self.users.authenticate(name, password)
        if user is None:
            return None
        signed = self._key_for(user)
        self.audit.record(
            self.grants.access(user, signed.key), "user.login", "user", user.id, method="password"
        )
        return signed

    def sign_in_ldap(self, name: str, password: str) -> SignedIn | None:
        """As ``sign_in``, against the directory: None for a wrong name or password."""
        self.require_sign_in()
        ldap = self.methods.ldap
        if ldap is None:
            raise ConfigError("LDAP sign-in is not set up here (ldap_url); sign in another way.")
        try:
            identity = ldap.authenticate(name, password)
        except IdentityRefused:
            return None
        return self._signed_in(self.methods.linker.link(identity))

    def _others(self) -> str:
        offered = self.offered()
        ways = [w for w, on in (("LDAP", offered.ldap), (offered.oidc, offered.oidc)) if on]
        return " or ".join(ways) or "an API key"

    # --- OpenID Connect --------------------------------------------------------------------
    def start_oidc(self, return_to: str) -> str:
        """The provider's URL to send the browser to; what the callback needs is kept."""
        self.require_sign_in()
        target = safe_return(return_to)
        started = self._oidc().start()
        data = {"nonce": started.nonce, "verifier": started.verifier, "return_to": target}
        self.methods.store.put_state(started.state, "state", data, STATE_LIFETIME)
        return started.url

    def finish_oidc(self, code: str, state: str) -> tuple[str, str]:
        """The provider sent the browser back: (one-time ticket, where the page goes).
        A state used before, or never made here, is refused."""
        self.require_sign_in()
        kept = self.methods.store.take_state(state, "state") if state else None
        if kept is None:
            raise IdentityRefused(
                "This sign-in was finished already or has expired; sign in again."
            )
        identity = self._oidc().finish(code, kept["verifier"], kept["nonce"])
        linked = self.methods.linker.link(identity)
        record_sign_in(self.audit, linked)
        ticket = secrets.token_urlsafe(32)
        self.methods.store.put_state(ticket, "ticket", {"user_id": linked.user.id}, TICKET_LIFETIME)
        return ticket, str(kept["return_to"])

    def redeem(self, ticket: str) -> SignedIn:
        """The key for a ticket the callback gave (once; it expires in a minute)."""
        self.require_sign_in()
        kept = self.methods.store.take_state(ticket, "ticket") if ticket else None
        if kept is None:
            raise IdentityRefused(
                "This sign-in ticket was used already or has expired; sign in again."
            )
        user = self.users.get_user(str(kept["user_id"]))
        if user.disabled:
            raise IdentityRefused("This Citewell account is disabled; ask an admin to enable it.")
        return self._key_for(user)

    def _oidc(self) -> OidcClient:
        if self.methods.oidc is None:
            raise ConfigError("OpenID Connect sign-in is not set up here (oidc_issuer).")
        return self.methods.oidc

    # --- the key a sign-in gives -------------------------------------------------------------
    def _signed_in(self, linked: Linked) -> SignedIn:
        signed = self._key_for(linked.user)
        record_sign_in(self.audit, linked)
        return signed

    def _key_for(self, user: User) -> SignedIn:
        expires = time.time() + self.settings.session_hours * 3600
        key, plain = self.users.create_key(
            user.id, SIGN_IN, expires_at=expires, max_live=self.settings.max_keys_per_user
        )
        return SignedIn(user, key, plain, expires)


def sign_out(users: AuthStore, audit: AuditLog, access: Access) -> bool:
    """End the caller's session: the sign-in key they called with stops working. Other
    keys (made for scripts) are left alone; True if a key was revoked."""
    key = access.key
    if key is None or key.name != SIGN_IN:
        return False
    users.revoke_key(key.id)
    audit.record(access, "user.logout", "user", access.user_id)
    return True
