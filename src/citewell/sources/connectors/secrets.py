"""Connector credentials, encrypted at rest (Fernet: AES-128-CBC with HMAC-SHA256) with a
key derived from ``connector_secret_key`` or, if that is empty, from a key the server makes
once and keeps in its database. They are decrypted only to run a sync."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping

from cryptography.fernet import Fernet, InvalidToken

from citewell.errors import ConfigError


class CredentialBox:
    def __init__(self, secret: str) -> None:
        digest = hashlib.sha256(f"citewell-connectors\0{secret}".encode()).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(digest))

    def seal(self, credentials: Mapping[str, str]) -> str:
        if not credentials:
            return ""
        return self._fernet.encrypt(json.dumps(dict(credentials)).encode()).decode()

    def open(self, sealed: str) -> dict[str, str]:
        if not sealed:
            return {}
        try:
            return dict(json.loads(self._fernet.decrypt(sealed.encode())))
        except InvalidToken as exc:
            raise ConfigError(
                "A connector's credentials cannot be decrypted: connector_secret_key is not "
                "the key they were saved with. Set it back, or enter the credentials again."
            ) from exc
