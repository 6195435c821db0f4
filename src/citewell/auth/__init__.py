"""Identities: users (argon2 passwords) and API keys (hashed at rest, shown once)."""

from citewell.auth.store import ApiKey, AuthStore, KeyNotFound, User, UserNotFound

__all__ = ["ApiKey", "AuthStore", "KeyNotFound", "User", "UserNotFound"]
