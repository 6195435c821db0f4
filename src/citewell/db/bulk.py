"""Many rows into one table in one statement, on SQLite as on PostgreSQL.

Python's sqlite3 runs an ``executemany`` one step a row and lets go of the GIL around each
step; taking it back waits, beside a thread busy in Python, up to the interpreter's switch
interval (5 ms). So an import's catalog writes, beside its reading thread, waited on the GIL
for most of their time: 20 batches of 1,638 files and their links took 351 s beside a
spinning thread against 5.5 s alone (journal, "The catalog's rows in one statement"). Here
SQLite reads the rows from one JSON array (``json_each``): one step for the batch. The
values are what SQLAlchemy would have bound (its type's bind processor, a column's default
where a row leaves it out). PostgreSQL's driver sends a batch's rows in one round trip
already, so there the rows go as ``executemany``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from functools import lru_cache
from operator import itemgetter
from typing import Any

from sqlalchemy import Column, Insert, Table, insert
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

NUL = "\\u0000"  # as json.dumps writes it (and a text's own backslash and "u0000")


def insert_rows(
    session: Session,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    update_on: Sequence[str] = (),
) -> None:
    """Insert ``rows`` (column → value, each with the same columns) into ``table``; with
    ``update_on`` (the columns of a unique key), a row whose key exists updates that row's
    other given columns instead."""
    if not rows:
        return
    dialect, names = session.get_bind().dialect, tuple(rows[0])
    columns = _columns(table, names) if dialect.name == "sqlite" and _has_json() else None
    if columns is not None:
        payload = _json_rows(dialect, columns, names, rows)
        if payload is not None:
            sql = _sqlite_sql(table.name, tuple(c.name for c in columns), names, tuple(update_on))
            session.connection().exec_driver_sql(sql, (payload,))
            return
    session.execute(_statement(dialect.name, table, names, tuple(update_on)), rows)


@lru_cache(maxsize=1)
def _has_json() -> bool:
    """Whether this SQLite has its JSON functions (built in since 3.38, an option before)."""
    with closing(sqlite3.connect(":memory:")) as db:
        try:
            db.execute("SELECT value FROM json_each('[1]')").fetchall()
        except sqlite3.OperationalError:
            return False
    return True


def _columns(table: Table, names: Sequence[str]) -> list[Column[Any]] | None:
    """The given columns, then those left out that have a default made in Python (None:
    one has a default that SQL makes: the rows go as ``executemany``)."""
    left_out = [c for c in table.c if c.name not in names and c.default is not None]
    if any(not (c.default.is_scalar or c.default.is_callable) for c in left_out):  # type: ignore[union-attr]
        return None
    return [table.c[name] for name in names] + left_out


def _json_rows(
    dialect: Dialect,
    columns: Sequence[Column[Any]],
    names: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
) -> str | None:
    """The rows as one JSON array of arrays, each the ``names`` given then the defaults of
    the ``columns`` after them, as bound (a row as one C call where no type processes
    values: the Python a value cost more than SQLite's insert); None where JSON cannot
    carry a value as bound (bytes, a float that is not a number) or SQLite's JSON would
    cut a text at its NUL."""
    given = itemgetter(*names) if len(names) > 1 else (lambda row: (row[names[0]],))
    defaults = [_default(column) for column in columns[len(names) :]]
    processed = [(n, p) for n, column in enumerate(columns) if (p := _processor(dialect, column))]
    values = []
    for row in rows:
        value = [*given(row), *(make() for make in defaults)]
        for n, process in processed:
            value[n] = process(value[n])
        values.append(value)
    try:
        payload = json.dumps(values, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return None if NUL in payload else payload


def _processor(dialect: Dialect, column: Column[Any]) -> Callable[[Any], Any] | None:
    """What SQLAlchemy does to the column's values before the driver gets them, if any."""
    process: Callable[[Any], Any] | None = column.type.dialect_impl(dialect).bind_processor(dialect)
    return process


def _default(column: Column[Any]) -> Callable[[], Any]:
    """The value of a column that rows leave out (one with a default made in Python)."""
    default = column.default
    assert default is not None
    if default.is_callable:
        make = default.arg  # type: ignore[attr-defined]  # takes SQLAlchemy's context
        return lambda: make(None)
    fixed = default.arg  # type: ignore[attr-defined]
    return lambda: fixed


@lru_cache(maxsize=32)
def _sqlite_sql(
    table: str, names: tuple[str, ...], given: tuple[str, ...], update_on: tuple[str, ...]
) -> str:
    """The statement that inserts the ``names`` columns; with ``update_on``, a row whose
    key exists updates the ``given`` columns (not those filled with their defaults)."""
    quoted = ", ".join(f'"{name}"' for name in names)
    # json_extract, not ->> (SQLite 3.38): the same values, from older SQLite too
    picked = ", ".join(f"json_extract(value, '$[{n}]')" for n in range(len(names)))
    sql = f'INSERT INTO "{table}" ({quoted}) SELECT {picked} FROM json_each(?)'
    if not update_on:
        return sql
    changed = ", ".join(f'"{name}" = excluded."{name}"' for name in given if name not in update_on)
    keys = ", ".join(f'"{name}"' for name in update_on)
    # "WHERE true": SQLite would read ON CONFLICT after a bare SELECT as a join's condition.
    return f"{sql} WHERE true ON CONFLICT ({keys}) DO UPDATE SET {changed}"


@lru_cache(maxsize=32)
def _statement(
    dialect: str, table: Table, names: tuple[str, ...], update_on: tuple[str, ...]
) -> Insert:
    """Made once per columns: an upsert's ``excluded`` table costs 3 ms to build, as much
    as writing 150 rows."""
    if not update_on:
        return insert(table)
    statement = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(table)
    changed = {name: statement.excluded[name] for name in names if name not in update_on}
    return statement.on_conflict_do_update(index_elements=list(update_on), set_=changed)
