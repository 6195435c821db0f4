"""Each SQLite connection of the catalog gets the settings its speed and safety rest on
(db/engine.py)."""

from __future__ import annotations

from citewell.db.engine import CACHE_KIB, CHECKPOINT_PAGES, sqlite_engine


def test_every_connection_gets_the_catalogs_pragmas(tmp_path):
    engine = sqlite_engine(tmp_path / "catalog.db")
    with engine.connect() as first, engine.connect() as second:  # two at once: both set
        for connection in (first, second):
            value = lambda name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()  # noqa: B023, E731
            assert value("journal_mode") == "wal"
            assert value("synchronous") == 1  # NORMAL
            assert value("foreign_keys") == 1
            assert value("cache_size") == -CACHE_KIB
            assert value("wal_autocheckpoint") == CHECKPOINT_PAGES == 10_000
    engine.dispose()
