"""Settings of signing in with the company's identity: OpenID Connect, LDAP / Active
Directory, a trusted header from a reverse proxy, and how their groups become Citewell's."""

from __future__ import annotations

import ipaddress

from pydantic import field_validator

from citewell.config.fields import Section, setting

DISCOVERY = "/.well-known/openid-configuration"


class IdentitySection(Section):
    """Who a person is, by the identity provider the company runs (docs/deploy.md)."""

    password_sign_in: bool = setting(
        True,
        "Sign in with a Citewell name and password (POST /api/v1/auth/login). Off: only the "
        "company's identity (OIDC, LDAP, trusted header) and API keys; admins' passwords too.",
        "ENABLE_PASSWORD_AUTH",
    )

    sign_up: bool = setting(
        False,
        "Make a Citewell user on a person's first sign-in through OIDC, LDAP or the trusted "
        "header. Off: only people an admin made first (`citewell user create NAME`, without "
        "a password) may sign in; their account is linked to the identity on first sign-in.",
        "ENABLE_OAUTH_SIGNUP",
    )

    group_management: bool = setting(
        True,
        "At each sign-in, set the person's membership of Citewell groups to the groups the "
        "identity provider names (by the same name, or through identity_group_map). Only "
        "memberships made this way are removed; those an admin made stay.",
        "ENABLE_OAUTH_GROUP_MANAGEMENT",
    )

    group_creation: bool = setting(
        False,
        "Make a Citewell group for a provider's group that has none. Off: provider groups "
        "without a Citewell group of that name are left out.",
        "ENABLE_OAUTH_GROUP_CREATION",
    )

    identity_group_map: dict[str, str] = setting(
        {},
        "Provider group → Citewell group name, for groups whose provider names are ids or "
        "DNs (Entra ID's object ids, Active Directory's DNs), as JSON. Unmapped groups keep "
        "their name (an LDAP DN's first value, e.g. 'engineering' for cn=engineering,…).",
    )

    admin_groups: str = setting(
        "",
        "Provider groups (names after identity_group_map), comma-separated, whose members are "
        "admins; the role is set at each sign-in. Empty: roles are left as an admin set them.",
    )

    # --- OpenID Connect -------------------------------------------------------------------
    oidc_issuer: str = setting(
        "",
        "The OpenID provider's issuer URL (https://…; http only on a loopback address). Its "
        "discovery document is read from ISSUER/.well-known/openid-configuration. Empty: "
        "no OIDC sign-in. Open WebUI's OPENID_PROVIDER_URL (the discovery URL) is accepted.",
        "OPENID_PROVIDER_URL",
    )

    oidc_client_id: str = setting("", "Citewell's client id at the provider.", "OAUTH_CLIENT_ID")

    oidc_client_secret: str = setting(
        "",
        "Citewell's client secret at the provider (empty: a public client, PKCE alone).",
        "OAUTH_CLIENT_SECRET",
    )

    oidc_provider_name: str = setting(
        "SSO", "The provider's name on the sign-in button.", "OAUTH_PROVIDER_NAME"
    )

    oidc_scopes: str = setting(
        "openid email profile",
        "Scopes asked for (add 'groups' where the provider needs it for the groups claim).",
        "OAUTH_SCOPES",
    )

    oidc_redirect_uri: str = setting(
        "",
        "Where the provider sends the browser back: register it at the provider. Empty: "
        "public_url + /api/v1/auth/oidc/callback.",
        "OPENID_REDIRECT_URI",
    )

    oidc_username_claim: str = setting(
        "preferred_username",
        "The claim that gives the Citewell user name (falls back to email, then sub).",
        "OAUTH_USERNAME_CLAIM",
    )

    oidc_email_claim: str = setting("email", "The claim holding the email.", "OAUTH_EMAIL_CLAIM")

    oidc_groups_claim: str = setting(
        "groups",
        "The claim holding the person's groups (a list, or one name); dots reach into "
        "objects (realm_access.roles).",
        "OAUTH_GROUPS_CLAIM",
    )

    oidc_access_tokens: bool = setting(
        False,
        "Accept the provider's JWT access tokens as API credentials (Authorization: Bearer), "
        "checked against its keys, issuer and oidc_audience; the token's subject must be a "
        "person who signed in to Citewell before (or sign_up is on).",
    )

    oidc_audience: str = setting(
        "",
        "The audience access tokens must carry to be accepted (empty: oidc_client_id).",
    )

    # --- LDAP / Active Directory ------------------------------------------------------------
    ldap_url: str = setting(
        "",
        "The directory server: ldaps://host[:port], or ldap://host[:port] with StartTLS. "
        "Empty: no LDAP sign-in.",
    )

    ldap_start_tls: bool = setting(
        True, "Upgrade an ldap:// connection with StartTLS before any bind.", "LDAP_USE_TLS"
    )

    ldap_ca_file: str = setting(
        "",
        "A PEM file of the CA that signed the directory's certificate (empty: the system's).",
        "LDAP_CA_CERT_FILE",
    )

    ldap_allow_plain: bool = setting(
        False,
        "Allow binds over an unencrypted connection (ldap:// without StartTLS). Passwords "
        "then cross the network in the clear: for tests on one machine only.",
    )

    ldap_bind_dn: str = setting(
        "",
        "The service account that searches for people (empty: search anonymously, which "
        "also needs ldap_allow_anonymous).",
        "LDAP_APP_DN",
    )

    ldap_bind_password: str = setting("", "The service account's password.", "LDAP_APP_PASSWORD")

    ldap_allow_anonymous: bool = setting(
        False, "Search without a service account (anonymous bind), where the directory allows."
    )

    ldap_search_base: str = setting(
        "", "Where people are searched, e.g. ou=people,dc=example,dc=org.", "LDAP_SEARCH_BASE"
    )

    ldap_search_filter: str = setting(
        "(objectClass=person)",
        "Who may sign in, as an LDAP filter ANDed with the name (Active Directory: leave out "
        "disabled accounts with (!(userAccountControl:1.2.840.113556.1.4.803:=2))).",
        "LDAP_SEARCH_FILTERS",
    )

    ldap_username_attribute: str = setting(
        "uid",
        "The attribute people sign in with (AD: sAMAccountName).",
        "LDAP_ATTRIBUTE_FOR_USERNAME",
    )

    ldap_email_attribute: str = setting("mail", "The email attribute.", "LDAP_ATTRIBUTE_FOR_MAIL")

    ldap_groups_attribute: str = setting(
        "memberOf",
        "The person's attribute listing their groups' DNs (used when ldap_group_filter is empty).",
        "LDAP_ATTRIBUTE_FOR_GROUPS",
    )

    ldap_group_filter: str = setting(
        "",
        "Find groups by a search instead, {dn} standing for the person's DN, e.g. "
        "(&(objectClass=groupOfNames)(member={dn})); searched under ldap_group_base.",
    )

    ldap_group_base: str = setting("", "Where groups are searched (empty: ldap_search_base).")

    ldap_sync_minutes: float = setting(
        60.0,
        "How often the server looks every LDAP user up again: someone gone from the "
        "directory (or no longer matching ldap_search_filter) is disabled, which stops their "
        "API keys; the others' groups and role follow the directory. 0: only at sign-in and "
        "`citewell identity sync`.",
        ge=0,
    )

    # --- a reverse proxy that signs people in -------------------------------------------------
    trusted_header: str = setting(
        "",
        "A header the reverse proxy in front sets to the signed-in person's name or email "
        "(oauth2-proxy: X-Forwarded-Email; Authelia: Remote-User). Honoured only from "
        "trusted_proxies; from any other address a request carrying it is refused.",
        "WEBUI_AUTH_TRUSTED_EMAIL_HEADER",
    )

    trusted_groups_header: str = setting(
        "",
        "A header with the person's groups, comma-separated (Authelia: Remote-Groups).",
        "WEBUI_AUTH_TRUSTED_GROUPS_HEADER",
    )

    trusted_proxies: str = setting(
        "",
        "Addresses or networks (CIDR), comma-separated, of the reverse proxies whose "
        "trusted_header counts, e.g. 127.0.0.1,10.0.0.0/8: the address that connects, not "
        "X-Forwarded-For.",
    )

    @field_validator("oidc_issuer", mode="after")
    @classmethod
    def _issuer_not_discovery(cls, value: str) -> str:
        # Open WebUI names the discovery document; Citewell the issuer it belongs to.
        return value.removesuffix(DISCOVERY).rstrip("/")

    @field_validator("trusted_proxies", mode="after")
    @classmethod
    def _networks(cls, value: str) -> str:
        for part in _names(value):
            try:
                ipaddress.ip_network(part, strict=False)
            except ValueError as exc:
                raise ValueError(f"{part!r} is not an address or network (CIDR)") from exc
        return value

    def proxy_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        return [ipaddress.ip_network(part, strict=False) for part in _names(self.trusted_proxies)]

    def admin_group_names(self) -> frozenset[str]:
        return frozenset(_names(self.admin_groups))


def _names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]
