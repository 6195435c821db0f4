"""Signing in with the company's identity: one small class per method (OpenID Connect,
LDAP, a trusted proxy header), each turning what the provider says into an
``ExternalIdentity``; ``IdentityLinker`` maps that to a Citewell user and groups."""

from citewell.auth.identity.types import ExternalIdentity, IdentityRefused, SignUpClosed

__all__ = ["ExternalIdentity", "IdentityRefused", "SignUpClosed"]
