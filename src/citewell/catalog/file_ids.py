"""File ids: a keyed hash of (tenant, content hash), so anyone holding a copy of a file
cannot compute its id (ids were the content's hash: decision 0020), while every process of
one server, and a worker re-running a job, still names the same bytes of the same tenant
the same file. The key is made once per database, at first use, and kept in it
(``server_secrets``; ``citewell migrate`` moves it with the rest).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine

from citewell.db.models import ServerSecretRow

KEY_NAME = "file_ids"


class FileIds:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._key: bytes | None = None
        self._lock = threading.Lock()

    def __call__(self, tenant: str, sha256: str) -> str:
        """The id of the tenant's file with these bytes (32 hex characters)."""
        message = f"{tenant}\0{sha256}".encode()
        return hmac.new(self._secret(), message, hashlib.sha256).hexdigest()[:32]

    def _secret(self) -> bytes:
        with self._lock:
            if self._key is None:
                self._key = bytes.fromhex(self._read_or_make())
            return self._key

    def _read_or_make(self) -> str:
        return server_key(self.engine, KEY_NAME)


def server_key(engine: Engine, name: str) -> str:
    """The database's key called ``name`` (64 hex characters); the first process to ask
    makes it (others then read it)."""
    insert = postgresql_insert if engine.dialect.name == "postgresql" else sqlite_insert
    made = insert(ServerSecretRow).values(name=name, value=secrets.token_hex(32))
    with engine.begin() as db:
        db.execute(made.on_conflict_do_nothing())
        found = db.scalar(select(ServerSecretRow.value).where(ServerSecretRow.name == name))
    assert found is not None
    return str(found)
