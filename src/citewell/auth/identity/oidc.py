"""Signing in with an OpenID provider: the authorization code flow with PKCE (``authlib``
does the protocol), ID tokens and access tokens checked with ``joserfc`` against the
provider's keys (fetched again once when a token names a key not seen yet: key rotation),
then the claims read into an ``ExternalIdentity``."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from citewell.auth.identity.types import ExternalIdentity, IdentityRefused
from citewell.config import IdentitySection
from citewell.errors import CitewellError, ConfigError
from citewell.tracing.client import traced

TIMEOUT = 10.0
REQUIRED_METADATA = ("authorization_endpoint", "token_endpoint", "jwks_uri")
REFETCH_AFTER = 60.0  # seconds between fetches of the keys for an unknown key id
LEEWAY = 60  # seconds of clock difference allowed on exp / iat
ASYMMETRIC = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


class ProviderUnavailable(CitewellError):
    status = 502
    code = "identity_provider_unavailable"


@dataclass(frozen=True)
class Started:
    """A sign-in sent to the provider: the URL the browser goes to, and what the callback
    must find again (kept server-side under ``state``)."""

    url: str
    state: str
    nonce: str
    verifier: str


def is_loopback_url(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("127.0.0.1", "::1", "localhost")


def claim(claims: dict[str, Any], path: str) -> Any:
    """A claim by name, dots reaching into objects (realm_access.roles)."""
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


class OidcClient:
    def __init__(
        self, settings: IdentitySection, redirect_uri: str, refetch_after: float = REFETCH_AFTER
    ) -> None:
        issuer = settings.oidc_issuer
        if not issuer.startswith("https://") and not is_loopback_url(issuer):
            raise ConfigError(
                "oidc_issuer must be an https:// URL (http only on a loopback address)."
            )
        if not settings.oidc_client_id:
            raise ConfigError(
                "OIDC sign-in needs oidc_client_id (Citewell's client at the provider)."
            )
        if not redirect_uri.startswith(("https://", "http://")):
            raise ConfigError(
                "OIDC sign-in needs the URL people open Citewell at: set public_url (e.g. "
                "https://rag.example.org) or oidc_redirect_uri, so the provider sends them "
                "back to Citewell and nowhere else."
            )
        self.settings, self.issuer, self.redirect_uri = settings, issuer, redirect_uri
        self._http = httpx.Client(timeout=TIMEOUT, follow_redirects=False, transport=traced())
        self._lock = threading.Lock()
        self._metadata: dict[str, Any] | None = None
        self._keys: Any = None
        self._keys_at = 0.0
        self.refetch_after = refetch_after

    # --- the provider's metadata and keys ----------------------------------------------
    def metadata(self) -> dict[str, Any]:
        with self._lock:
            if self._metadata is None:
                found = self._get(f"{self.issuer}/.well-known/openid-configuration")
                named = str(found.get("issuer", ""))
                if named.rstrip("/") != self.issuer:
                    raise ConfigError(
                        f"The provider calls itself {named!r}, not oidc_issuer "
                        f"{self.issuer!r}; set oidc_issuer to its issuer exactly."
                    )
                missing = [k for k in REQUIRED_METADATA if not found.get(k)]
                if missing:
                    raise ConfigError(
                        f"The provider's discovery document lacks {', '.join(missing)}; is "
                        f"oidc_issuer ({self.issuer}) an OpenID Connect provider?"
                    )
                # Tokens carry the issuer as the provider spells it (Authentik: a final /).
                self.issuer = named
                self._metadata = found
            return self._metadata

    def _get(self, url: str) -> dict[str, Any]:
        try:
            response = self._http.get(url)
            response.raise_for_status()
            found: dict[str, Any] = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderUnavailable(
                f"Cannot read {url} from the OpenID provider ({exc}); check oidc_issuer and retry."
            ) from exc
        return found

    def _key_set(self, fresh: bool) -> Any:
        from joserfc.jwk import KeySet

        with self._lock:
            stale = time.monotonic() - self._keys_at > self.refetch_after
            if self._keys is None or (fresh and stale):
                uri = (self._metadata or {}).get("jwks_uri", "")
                self._keys = KeySet.import_key_set(self._get(uri))  # type: ignore[arg-type]
                self._keys_at = time.monotonic()
            return self._keys

    def _algorithms(self) -> list[str]:
        offered = self.metadata().get("id_token_signing_alg_values_supported") or ["RS256"]
        return [a for a in offered if a in ASYMMETRIC] or ["RS256"]

    # --- the browser's sign-in ------------------------------------------------------------
    def start(self) -> Started:
        from authlib.integrations.httpx_client import OAuth2Client

        meta = self.metadata()
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(48)
        client = self._oauth(OAuth2Client)
        url, _ = client.create_authorization_url(
            meta["authorization_endpoint"], state=state, nonce=nonce, code_verifier=verifier
        )
        return Started(url, state, nonce, verifier)

    def finish(self, code: str, verifier: str, nonce: str) -> ExternalIdentity:
        """Trade the code for tokens and check the ID token; the person it names."""
        from authlib.common.errors import AuthlibBaseError
        from authlib.integrations.httpx_client import OAuth2Client

        meta = self.metadata()
        client = self._oauth(OAuth2Client)
        try:
            token = client.fetch_token(
                meta["token_endpoint"], code=code, code_verifier=verifier, timeout=TIMEOUT
            )
        except (AuthlibBaseError, httpx.HTTPError, ValueError) as exc:
            raise IdentityRefused(
                f"The provider did not accept the sign-in ({exc}); try again."
            ) from exc
        raw = token.get("id_token")
        if not raw:
            raise IdentityRefused("The provider sent no ID token; add 'openid' to oidc_scopes.")
        return self.identity(self.verify_id_token(str(raw), nonce))

    def _oauth(self, kind: Any) -> Any:
        s = self.settings
        return kind(
            client_id=s.oidc_client_id,
            client_secret=s.oidc_client_secret or None,
            scope=s.oidc_scopes,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_basic" if s.oidc_client_secret else "none",
            timeout=TIMEOUT,
            transport=traced(),
        )

    # --- tokens -----------------------------------------------------------------------------
    def verify_id_token(self, raw: str, nonce: str) -> dict[str, Any]:
        """The ID token's claims if it is signed by the provider, for Citewell, fresh, and
        carries the nonce this sign-in sent; IdentityRefused otherwise."""
        claims = self._verified(raw, self.settings.oidc_client_id)
        if not nonce or claims.get("nonce") != nonce:
            raise IdentityRefused(
                "The ID token was not made for this sign-in (nonce); sign in again."
            )
        azp = claims.get("azp")
        if (
            isinstance(claims.get("aud"), list)
            and len(claims["aud"]) > 1
            and azp != self.settings.oidc_client_id
        ):
            raise IdentityRefused("The ID token was issued to another client (azp).")
        return claims

    def verify_access_token(self, raw: str) -> dict[str, Any]:
        """An access token's claims, if it is a JWT signed by the provider for oidc_audience."""
        return self._verified(raw, self.settings.oidc_audience or self.settings.oidc_client_id)

    def _verified(self, raw: str, audience: str) -> dict[str, Any]:
        from joserfc import jwt
        from joserfc.errors import JoseError

        self.metadata()
        try:
            token = self._decode(raw, fresh=False)
        except JoseError:
            token = None
        try:
            token = token or self._decode(raw, fresh=True)  # a rotated key, fetched again
            registry = jwt.JWTClaimsRegistry(
                leeway=LEEWAY,
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": audience},
                sub={"essential": True},
                exp={"essential": True},
            )
            registry.validate(token.claims)
        except (JoseError, ValueError) as exc:
            raise IdentityRefused(f"The token was refused: {_reason(exc)}. Sign in again.") from exc
        return dict(token.claims)

    def _decode(self, raw: str, fresh: bool) -> Any:
        from joserfc import jwt

        return jwt.decode(raw, self._key_set(fresh), algorithms=self._algorithms())

    def identity(self, claims: dict[str, Any]) -> ExternalIdentity:
        s = self.settings
        email = str(claim(claims, s.oidc_email_claim) or "")
        name = str(claim(claims, s.oidc_username_claim) or email or claims["sub"])
        groups = claim(claims, s.oidc_groups_claim)
        if isinstance(groups, str):
            groups = [groups]
        names = tuple(str(g) for g in groups) if isinstance(groups, list) else ()
        return ExternalIdentity("oidc", self.issuer, str(claims["sub"]), name, email, names)

    def close(self) -> None:
        self._http.close()


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.replace("_", " ")
