"""Passwords (argon2id, a slow, salted hash) and API keys (random; kept as SHA-256)."""

from __future__ import annotations

import hashlib
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

KEY_PREFIX = "cw_"
MIN_PASSWORD = 10

_hasher = PasswordHasher()  # argon2id with the library's recommended parameters


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(stored: str, password: str) -> bool:
    """True if ``password`` matches; False for a wrong one or an account without a password."""
    if not stored:
        return False
    try:
        return _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


_DUMMY: list[str] = []


def burn_verify(password: str) -> None:
    """The work of a real check against nothing: an unknown name takes as long to refuse as a
    wrong password, so timing does not tell which names exist."""
    if not _DUMMY:
        _DUMMY.append(_hasher.hash("not a real password"))
    verify_password(_DUMMY[0], password)


def new_api_key() -> str:
    """A key to show once: 'cw_' and 43 URL-safe characters (256 random bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_prefix(key: str) -> str:
    """What is shown to tell keys apart: 'cw_' and the next 6 characters."""
    return key[: len(KEY_PREFIX) + 6]
