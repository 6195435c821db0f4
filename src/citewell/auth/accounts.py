"""The account stores of one database: users and keys, grants, and the audit trail. Built
once by the application root; the HTTP app, the MCP transports and the CLI receive them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Engine

from citewell.auth.audit import AuditLog
from citewell.auth.grants import GrantStore
from citewell.auth.store import AuthStore


@dataclass(frozen=True)
class Accounts:
    users: AuthStore
    grants: GrantStore
    audit: AuditLog

    @classmethod
    def on(cls, engine: Engine) -> Accounts:
        return cls(AuthStore(engine), GrantStore(engine), AuditLog(engine))
