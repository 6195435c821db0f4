"""What an identity provider says about a person, and the errors of signing in through one."""

from __future__ import annotations

from dataclasses import dataclass

from citewell.errors import Forbidden, Unauthenticated

METHODS = ("oidc", "ldap", "header")


class IdentityRefused(Unauthenticated):
    """The provider's answer does not prove who the person is (bad token, wrong password)."""

    code = "identity_refused"


class SignUpClosed(Forbidden):
    """The person is who they say, but has no Citewell account and sign-up is off."""

    code = "sign_up_closed"


@dataclass(frozen=True)
class ExternalIdentity:
    """A person as an identity provider names them. ``issuer`` + ``subject`` are stable
    (an OIDC issuer and ``sub``, an LDAP server and DN, 'proxy' and the header's value);
    ``name`` is what the Citewell user is called; ``groups`` are the provider's names."""

    method: str  # one of METHODS
    issuer: str
    subject: str
    name: str
    email: str = ""
    groups: tuple[str, ...] = ()
