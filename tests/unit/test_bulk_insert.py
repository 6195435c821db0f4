"""Many rows in one statement on SQLite (db/bulk.py): the values SQLAlchemy would bind, one
step for the batch, and executemany where JSON cannot carry a value."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    event,
    func,
    select,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from citewell.db import bulk
from citewell.db.bulk import insert_rows
from citewell.db.engine import sqlite_engine

metadata = MetaData()
THINGS = Table(
    "things",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("text", Text, nullable=True),
    Column("count", Integer, default=7),
    Column("at", Float, default=lambda: 1.5),
    Column("flag", Boolean, default=False),
    Column("when", DateTime, nullable=True),
    Column("kind", String(20), server_default="plain"),
)
BLOBS = Table(
    "blobs", metadata, Column("id", String(32), primary_key=True), Column("data", LargeBinary)
)
STAMPED = Table(
    "stamped",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("made", DateTime, default=func.current_timestamp()),
)


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = sqlite_engine(tmp_path / "bulk.sqlite")
    metadata.create_all(engine)
    return engine


def executions(engine: Engine) -> list[tuple[str, bool]]:
    """Each statement the engine sends from here on, and whether as executemany."""
    sent: list[tuple[str, bool]] = []

    @event.listens_for(engine, "before_cursor_execute")
    def _sent(_conn, _cursor, statement, _parameters, _context, many):  # type: ignore[no-untyped-def]
        sent.append((statement, many))

    return sent


def written(engine: Engine, table: Table, rows: list[dict], update_on: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    with Session(engine) as session, session.begin():
        insert_rows(session, table, rows, update_on)
    with engine.connect() as db:
        return {row.id: row for row in db.execute(select(table))}


def test_rows_go_in_one_statement_with_the_values_bound_as_given(engine: Engine) -> None:
    texts = ['say "hi"', "é ü 中文 🎉", "back\\slash", "", "two\nlines", None]
    when = dt.datetime(2026, 12, 7, 23, 5, 1, 123456)
    rows = [
        {"id": f"r{n}", "text": text, "count": 2**62 + n, "at": 1765148700.123456 + n / 7,
         "flag": n % 2 == 0, "when": when if n else None}
        for n, text in enumerate(texts)
    ]  # fmt: skip
    sent = executions(engine)
    found = written(engine, THINGS, rows)
    inserts = [(sql, many) for sql, many in sent if sql.startswith('INSERT INTO "things"')]
    assert len(inserts) == 1 and "json_each" in inserts[0][0] and not inserts[0][1]
    for row in rows:
        got = found[row["id"]]
        assert (got.text, got.count, got.at, got.flag) == (
            row["text"], row["count"], row["at"], row["flag"]
        )  # fmt: skip
        assert got.when == row["when"] and got.kind == "plain"


def test_columns_left_out_take_their_defaults(engine: Engine) -> None:
    found = written(engine, THINGS, [{"id": "a"}, {"id": "b"}])
    assert [(r.count, r.at, r.flag, r.kind) for r in found.values()] == [
        (7, 1.5, False, "plain")
    ] * 2


def test_update_on_a_key_updates_the_rows_it_holds_and_inserts_the_others(
    engine: Engine,
) -> None:
    written(engine, THINGS, [{"id": "a", "text": "old", "count": 1}])
    again = [{"id": "a", "text": "new", "count": 2}, {"id": "b", "text": "b", "count": 3}]
    found = written(engine, THINGS, again, update_on=("id",))
    assert {k: (r.text, r.count) for k, r in found.items()} == {"a": ("new", 2), "b": ("b", 3)}
    # Columns the rows leave out keep what a held row has (only a new one gets the default).
    written(engine, THINGS, [{"id": "a", "text": "x", "flag": True}], update_on=("id",))
    found = written(engine, THINGS, [{"id": "a", "text": "y"}], update_on=("id",))
    assert (found["a"].text, found["a"].flag, found["a"].count) == ("y", True, 2)


@pytest.mark.parametrize(
    ("table", "rows"),
    [
        (BLOBS, [{"id": "a", "data": b"\x00\xff"}]),  # bytes: not in JSON
        (THINGS, [{"id": "a", "text": "cut\x00here"}]),  # SQLite's JSON cuts at NUL
        (STAMPED, [{"id": "a"}]),  # a default that SQL makes
    ],
    ids=["bytes", "nul", "sql-default"],
)
def test_what_json_cannot_carry_goes_as_executemany(
    engine: Engine, table: Table, rows: list[dict]
) -> None:
    sent = executions(engine)
    found = written(engine, table, rows)
    inserts = [(sql, many) for sql, many in sent if sql.startswith("INSERT")]
    assert len(inserts) == 1 and "json_each" not in inserts[0][0]
    got = found["a"]
    if table is BLOBS:
        assert got.data == b"\x00\xff"
    elif table is THINGS:
        assert got.text == "cut\x00here"
    else:
        assert got.made is not None


def test_no_rows_send_nothing(engine: Engine) -> None:
    sent = executions(engine)
    with Session(engine) as session, session.begin():
        insert_rows(session, THINGS, [])
    assert not [sql for sql, _ in sent if sql.startswith("INSERT")]


def test_without_sqlites_json_functions_the_rows_go_as_executemany(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "_has_json", lambda: False)  # SQLite before 3.38, built without
    sent = executions(engine)
    found = written(engine, THINGS, [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}])
    inserts = [(sql, many) for sql, many in sent if sql.startswith("INSERT")]
    assert len(inserts) == 1 and "json_each" not in inserts[0][0] and inserts[0][1]
    assert {k: r.text for k, r in found.items()} == {"a": "x", "b": "y"}
