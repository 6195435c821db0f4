"""A reverse proxy that signs people in (oauth2-proxy, Authelia, Authentik's outpost) and
names them in a header: believed only from the configured proxy addresses."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from citewell.auth.identity.types import ExternalIdentity
from citewell.config import IdentitySection
from citewell.errors import Forbidden

ISSUER = "proxy"
# Where the ASGI scope keeps the address that connected (api/peer.py puts it there), before
# X-Forwarded-For from a proxy rewrites the client address.
PEER = "citewell.peer"


class UntrustedHeader(Forbidden):
    code = "untrusted_identity_header"


class TrustedHeader:
    def __init__(self, settings: IdentitySection) -> None:
        self.header = settings.trusted_header.lower()
        self.groups_header = settings.trusted_groups_header.lower()
        self.networks = settings.proxy_networks()

    def identity(self, headers: Mapping[str, str], peer: str) -> ExternalIdentity | None:
        """The person the proxy names, None when the request carries no such header; from
        an address that is not a trusted proxy, a request with the header is refused."""
        value = headers.get(self.header, "").strip()
        if not value and self.header not in headers:
            return None
        if not self.trusts(peer):
            raise UntrustedHeader(
                f"The {self.header} header is only taken from trusted_proxies; this request "
                "came from elsewhere. Sign in another way, or go through the proxy."
            )
        if not value:
            raise UntrustedHeader(f"The proxy sent an empty {self.header} header.")
        groups = headers.get(self.groups_header, "") if self.groups_header else ""
        names = tuple(g.strip() for g in groups.split(",") if g.strip())
        email = value if "@" in value else ""
        return ExternalIdentity("header", ISSUER, value.lower(), value, email, names)

    def trusts(self, peer: str) -> bool:
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.networks)
