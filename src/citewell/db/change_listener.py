"""The change counter on PostgreSQL: a number each process raises when the database tells it
(LISTEN/NOTIFY) that a table a request reads has changed.

A row every writer updates would serialise them, so PostgreSQL triggers send a
notification instead (statement-level, on the same TRACKED tables as SQLite's counter).
PostgreSQL delivers it only once the change has committed, to every listening process, and
folds a transaction's notifications into one. Each process listens on a connection of its
own, on a background thread, and raises its local number per notification.

What that guarantees, and where it is weaker than SQLite's counter:

- A change by this process raises the number at its commit (``track_writes``), so its own
  next request reads afresh. The raise comes just before the commit (SQLAlchemy has no
  after-commit event for connections): a read that slips in between may keep the old row,
  until the notification raises the number again, milliseconds later.
- A change by another process or tool is seen once its notification arrives: typically
  within milliseconds, not at the very next request.
- The listener notifies itself once a second (a payload only it knows; other processes
  ignore it). Until its first ping comes back, and whenever none has for STALE_AFTER
  seconds, ``current()`` is None and every cache passes its calls through to the database;
  after a reconnect the number is raised, since notifications sent meanwhile are lost.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)

CHANNEL = "citewell_changes"
FUNCTION = "citewell_notify_change"
TABLE_FUNCTION = "citewell_notify_table"  # payload "table:<name>": a chunk store's version row
PING_SECONDS = 1.0  # how often the listener proves its LISTEN still holds
STALE_AFTER = 5.0  # seconds without that proof before caches stop trusting the number
RETRY_SECONDS = 1.0
APPLICATION_NAME = "citewell-change-listener"  # in pg_stat_activity
_WRITE = re.compile(r'\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)', re.IGNORECASE)
_WROTE = "citewell_tracked_write"


def _trigger(table: str) -> str:
    return f"{FUNCTION}_{table}"


def create_notify_triggers(connection: Connection, tables: Collection[str]) -> None:
    if connection.dialect.name != "postgresql":
        return
    connection.execute(
        text(
            f"CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN PERFORM pg_notify('{CHANNEL}', ''); RETURN NULL; END $$"
        )
    )
    for table in tables:
        connection.execute(
            text(
                f"CREATE OR REPLACE TRIGGER {_trigger(table)} "
                f"AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {FUNCTION}()"
            )
        )


def drop_notify_triggers(connection: Connection, tables: Collection[str]) -> None:
    if connection.dialect.name != "postgresql":
        return
    for table in tables:
        connection.execute(text(f"DROP TRIGGER IF EXISTS {_trigger(table)} ON {table}"))
    connection.execute(text(f"DROP FUNCTION IF EXISTS {FUNCTION}()"))


def notify_on_update(db: Connection, table: str) -> None:
    """A trigger that notifies ``table:<table>`` after each statement updating ``table``
    (a chunk store's version row, so snapshots need not read it before every use)."""
    function = f"{TABLE_FUNCTION}()"
    if db.execute(text("SELECT to_regprocedure(:f)"), {"f": function}).scalar() is None:
        db.execute(text("SELECT pg_advisory_xact_lock(hashtext(:f))"), {"f": function})
        db.execute(
            text(
                f"CREATE OR REPLACE FUNCTION {function} RETURNS trigger LANGUAGE plpgsql AS $$ "
                f"BEGIN PERFORM pg_notify('{CHANNEL}', 'table:' || TG_TABLE_NAME); "
                "RETURN NULL; END $$"
            )
        )
    trigger = f"{table}_notify"
    found = db.execute(
        text("SELECT 1 FROM pg_trigger WHERE tgname = :n AND tgrelid = to_regclass(:t)"),
        {"n": trigger, "t": table},
    ).first()
    if found is None:  # checked first: creating one locks the table's writers out meanwhile
        db.execute(
            text(
                f"CREATE OR REPLACE TRIGGER {trigger} AFTER UPDATE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {function}"
            )
        )


class ChangeListener:
    """A PostgreSQL database's change number in this process; listens from the first
    ``current()`` on until ``stop()``."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._generation = 0
        self._tables: dict[str, int] = {}  # table -> its own number (notify_on_update)
        self._alive_at: float | None = None
        self._outage = False
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> int | None:
        if self._thread is None:
            self._start()
        alive_at = self._alive_at
        if alive_at is None or time.monotonic() - alive_at > STALE_AFTER:
            return None
        return self._generation

    def table_number(self, table: str) -> int | None:
        """A number that moves whenever ``table`` is updated (a notify_on_update table);
        None: trust nothing."""
        if self.current() is None:
            return None
        return self._tables.get(table, 0)

    def bump(self) -> None:
        with self._lock:
            self._generation += 1

    def bump_tables(self, tables: Collection[str]) -> None:
        with self._lock:
            for table in tables:
                self._tables[table] = self._tables.get(table, 0) + 1

    def stop(self) -> None:
        """The thread ends and closes its connection within PING_SECONDS."""
        self._stopped.set()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="citewell-change-listener", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._listen()
            except Exception as error:  # noqa: BLE001 - any failure: caches pass through
                # Once per outage, not once a second while the database is down.
                level = logging.DEBUG if self._outage else logging.WARNING
                self._outage = True
                log.log(level, "No change notifications (%s): requests read afresh.", error)
            self._alive_at = None
            self._stopped.wait(RETRY_SECONDS)

    def _listen(self) -> None:
        """Trusted only while its own pings come back through the channel: that proves the
        LISTEN holds on this very session (a pooler in transaction mode would drop it while
        plain queries still answer)."""
        connection = self._connect()
        ping = f"ping:{uuid.uuid4().hex}"
        try:
            connection.execute(f"LISTEN {CHANNEL}")
            self.bump()  # whatever changed while nobody listened
            while not self._stopped.is_set():
                connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, ping))
                for note in connection.notifies(timeout=PING_SECONDS):
                    if not note.payload:  # a trigger's
                        self.bump()
                    elif note.payload.startswith("table:"):
                        self.bump_tables((note.payload[6:],))
                    elif note.payload == ping:
                        self._alive_at, self._outage = time.monotonic(), False
        finally:
            self._alive_at = None
            connection.close()


def listener_for(engine: Engine, tables: Collection[str]) -> ChangeListener:
    """A listener for the engine's database, raised too by this process's own commits that
    wrote to one of ``tables`` (and each table's own number by any write to it). Holds no
    reference to the engine."""
    import psycopg

    conninfo = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    listener = ChangeListener(
        lambda: psycopg.connect(conninfo, autocommit=True, application_name=APPLICATION_NAME)
    )
    track_writes(engine, listener, frozenset(tables))
    return listener


def track_writes(engine: Engine, listener: ChangeListener, tables: frozenset[str]) -> None:
    @event.listens_for(engine, "before_cursor_execute")
    def _note(connection, _cursor, statement, _params, _context, _many):  # type: ignore[no-untyped-def]
        match = _WRITE.match(statement)
        if match is not None:
            connection.info.setdefault(_WROTE, set()).add(match.group(1))

    @event.listens_for(engine, "commit")
    def _committing(connection):  # type: ignore[no-untyped-def]
        written = connection.info.pop(_WROTE, None)
        if written:
            listener.bump_tables(written)
            if not tables.isdisjoint(written):
                listener.bump()

    @event.listens_for(engine, "rollback")
    def _rolled_back(connection):  # type: ignore[no-untyped-def]
        connection.info.pop(_WROTE, None)
