"""What a request reads from the database on every call, kept until the database changes.

Every request looks up its API key, the caller's grants, the KBs it names, and the links and
files of its results: six statements through the ORM, about half of a retrieval's time
outside the search itself. These rows change rarely, so each process keeps what it read,
and a counter tells it when to stop trusting that.

On SQLite, triggers raise ``change_counter.n`` in the same transaction as any insert,
update or delete of the TRACKED tables, whichever process or tool writes. A cache reads the
counter (a few microseconds on a plain sqlite3 connection) before it answers, and drops what
it holds when the number moved. Since the number and the change commit together, a revoked
key or grant is refused at the next request, in every process, as before. Values are read
from the database *after* the counter, so a change that lands in between is at worst
fetched again, never missed.

On PostgreSQL a row every writer updates would serialise them; there the number is kept by
each process from the database's notifications instead (db/change_listener.py, weaker in
one way: another process's change is seen milliseconds later, not at the next request).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Callable, Collection, Hashable, Iterable
from typing import Generic, Protocol, TypeVar

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from citewell.db.change_listener import listener_for

TRACKED = (
    "users",
    "api_keys",
    "groups",
    "group_members",
    "kb_grants",
    "model_presets",
    "model_preset_grants",
    "knowledge_bases",
    "knowledge_base_files",
    "files",
)
OPERATIONS = ("INSERT", "UPDATE", "DELETE")
MAX_ENTRIES = 50_000  # per cache; all are dropped at once when full

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _trigger(table: str, operation: str) -> str:
    return f"change_counter_{table}_{operation.lower()}"


def create_triggers(connection: Connection) -> None:
    if connection.dialect.name != "sqlite":
        return
    for table in TRACKED:
        for operation in OPERATIONS:
            connection.execute(
                text(
                    f"CREATE TRIGGER IF NOT EXISTS {_trigger(table, operation)} "
                    f"AFTER {operation} ON {table} "
                    "BEGIN UPDATE change_counter SET n = n + 1 WHERE id = 1; END"
                )
            )


def drop_triggers(connection: Connection) -> None:
    if connection.dialect.name != "sqlite":
        return
    for table in TRACKED:
        for operation in OPERATIONS:
            connection.execute(text(f"DROP TRIGGER IF EXISTS {_trigger(table, operation)}"))


class Counter(Protocol):
    def current(self) -> int | None:
        """A number that moves whenever a TRACKED table changes; None: trust nothing."""
        ...


class ChangeCounter:
    """The counter of one SQLite database, read on a connection of each thread's own.

    One connection behind a lock made a convoy: sqlite3 lets go of the GIL while it reads,
    so the thread holding the lock waited for the GIL while every other request thread
    waited for the lock (16 % of a loaded chat server's samples). Each thread's connection
    closes when the thread or this counter goes.
    """

    def __init__(self, path: str) -> None:
        self._uri = f"file:{path}?mode=ro"
        self._local = threading.local()

    def current(self) -> int | None:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self._uri, uri=True, isolation_level=None)
            self._local.connection = connection
        row = connection.execute("SELECT n FROM change_counter WHERE id = 1").fetchone()
        return None if row is None else int(row[0])


# One per engine, gone with it (tests open hundreds of databases in one process).
_counters: weakref.WeakKeyDictionary[Engine, Counter] = weakref.WeakKeyDictionary()
_counters_lock = threading.Lock()


def change_counter(engine: Engine) -> Counter | None:
    """The counter of the engine's database (None for in-memory SQLite). Call after
    ensure_schema."""
    with _counters_lock:
        if engine not in _counters:
            counter = _new_counter(engine)
            if counter is None:
                return None
            _counters[engine] = counter
        return _counters[engine]


def _new_counter(engine: Engine) -> Counter | None:
    if engine.dialect.name == "postgresql":
        listener = listener_for(engine, TRACKED)
        weakref.finalize(engine, listener.stop)  # its connection closes with the engine
        return listener
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    return ChangeCounter(database)


class ChangeCache(Generic[K, V]):
    """Values by key, kept while the counter stands (all of them, always, without one)."""

    def __init__(self, counter: Counter | None) -> None:
        self._counter = counter
        self._seen: int | None = None
        self._values: dict[K, V] = {}
        self._lock = threading.Lock()

    def _valid(self) -> int | None:
        """The counter now; empties the cache when it moved."""
        if self._counter is None:
            return None
        now = self._counter.current()
        with self._lock:
            if now != self._seen or len(self._values) >= MAX_ENTRIES:
                self._values = {}
                self._seen = now
        return now

    def get(self, key: K, load: Callable[[], V]) -> V:
        if self._valid() is None:
            return load()
        values = self._values
        if key in values:
            return values[key]
        value = load()
        values[key] = value  # into the dict of the counter read before the load
        return value

    def peek(self, key: K) -> V | None:
        """The value kept for ``key``, or None when it is not kept (or nothing is)."""
        if self._valid() is None:
            return None
        return self._values.get(key)

    def get_many(
        self, keys: Iterable[K], load: Callable[[Collection[K]], dict[K, V]]
    ) -> dict[K, V]:
        """Values of those keys that have one; ``load`` is asked only for keys not kept
        (a key it returns nothing for is remembered as having none)."""
        wanted = set(keys)
        if self._valid() is None:
            return load(wanted)
        values = self._values
        missing = [k for k in wanted if k not in values]
        if missing:
            found = load(missing)
            for k in missing:
                values[k] = found.get(k, _NONE)  # type: ignore[assignment]
        return {k: values[k] for k in wanted if values[k] is not _NONE}


_NONE: object = object()
