"""A real OpenID provider for tests: the npm package ``oidc-provider`` under Node, started on
127.0.0.1 with ``oidc/provider.mjs``, a signing key made here (so a test can also sign
tokens the provider never issued), clients, and people kept in a JSON file that a test may
change between sign-ins. ``scripts/setup-identity`` installs the package into ``.node``."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citewell.testing.processes import free_port, stop, wait_listening

SCRIPT = Path(__file__).with_name("oidc") / "provider.mjs"
API_AUDIENCE = "urn:citewell:api"


def node_folder() -> Path:
    """Where scripts/setup-identity installed oidc-provider (the repository's .node)."""
    return Path(__file__).resolve().parents[3] / ".node"


@dataclass
class OidcPerson:
    username: str
    password: str
    email: str
    groups: list[str] = field(default_factory=list)

    def claims(self) -> dict[str, Any]:
        return {
            "preferred_username": self.username,
            "name": self.username.title(),
            "email": self.email,
            "email_verified": True,
            "groups": self.groups,
        }


@dataclass
class OidcServer:
    """``start()`` with the clients' redirect URIs, ``stop()`` after. ``issuer`` is its URL;
    ``key`` the private signing key (a joserfc RSAKey)."""

    redirect_uris: list[str]
    client_id: str = "citewell"
    service_id: str = "reporting-service"
    service_secret: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="citewell-oidc-")))
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    people: dict[str, OidcPerson] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from joserfc.jwk import RSAKey

        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key-1", "use": "sig"})
        self.retired: list[Any] = []  # keys still published after a rotation

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def settings(self, public_url: str) -> dict[str, str]:
        """Citewell's settings for signing in with this provider, served at ``public_url``."""
        return {
            "oidc_issuer": self.issuer,
            "oidc_client_id": self.client_id,
            "oidc_scopes": "openid email profile groups",
            "oidc_provider_name": "Example IdP",
            "public_url": public_url,
        }

    def set_people(self, people: list[OidcPerson]) -> None:
        self.people = {p.username: p for p in people}
        data = {p.username: {"password": p.password, "claims": p.claims()} for p in people}
        (self.root / "people.json").write_text(json.dumps(data))

    def _config(self) -> dict[str, Any]:
        clients = [
            {
                "client_id": self.client_id,
                "token_endpoint_auth_method": "none",
                "redirect_uris": self.redirect_uris,
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
            },
            {
                "client_id": self.service_id,
                "client_secret": self.service_secret,
                "grant_types": ["client_credentials"],
                "redirect_uris": [],
                "response_types": [],
            },
        ]
        return {
            "issuer": self.issuer,
            "port": self.port,
            "clients": clients,
            "jwks": {"keys": [k.as_dict(private=True) for k in (self.key, *self.retired)]},
            "cookie_key": secrets.token_urlsafe(24),
            "people_file": str(self.root / "people.json"),
            "api_audience": API_AUDIENCE,
        }

    def start(self) -> None:
        modules = node_folder() / "node_modules"
        if not (modules / "oidc-provider").is_dir():
            raise RuntimeError("The OIDC tests need oidc-provider: run scripts/setup-identity.")
        (self.root / "node_modules").symlink_to(modules)
        shutil.copy(SCRIPT, self.root / "provider.mjs")
        if not (self.root / "people.json").exists():
            self.set_people([])
        (self.root / "config.json").write_text(json.dumps(self._config()))
        self._launch()

    def _launch(self) -> None:
        log = (self.root / "provider.log").open("ab")
        self.process = subprocess.Popen(
            ["node", str(self.root / "provider.mjs"), str(self.root / "config.json")],
            cwd=self.root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_listening(self.process, self.port, "oidc-provider", self.log, seconds=30)

    def rotate_key(self) -> None:
        """A new signing key, the old one still published (as providers rotate): the
        provider restarts on the same port with both."""
        from joserfc.jwk import RSAKey

        kid = f"test-key-{len(self.retired) + 2}"
        self.retired.insert(0, self.key)
        self.key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig"})
        self._halt()
        (self.root / "config.json").write_text(json.dumps(self._config()))
        self._launch()

    def log(self) -> str:
        return (self.root / "provider.log").read_text(errors="replace")

    def sign(self, claims: dict[str, Any], key: Any = None, alg: str = "RS256") -> str:
        """A JWT signed with the provider's key (or ``key``): for tokens it never issued."""
        from joserfc import jwt

        chosen = key or self.key
        header = {"alg": alg, "kid": chosen.kid or "test-key-1"}
        return jwt.encode(header, claims, chosen)

    def stop(self) -> None:
        self._halt()
        shutil.rmtree(self.root, ignore_errors=True)

    def _halt(self) -> None:
        stop(self.process)
