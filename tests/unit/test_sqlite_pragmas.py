"""Each SQLite connection of the catalog gets the settings its speed and safety rest on
(db/engine.py)."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError

from citewell.catalog.catalog import Catalog, FileRecord
from citewell.catalog.link_rows import FileLink
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


def test_a_catalog_write_on_a_new_data_dir_is_one_transaction(tmp_path):
    """Making a new catalog rebuilds its files table (db/legacy.py) on a connection of its
    own; the pool's connections after it still run a write as one transaction: a batch of
    links that fails half way leaves none of them (it once left the first, committed alone
    on the rebuild's connection, which it had switched to autocommit)."""
    engine = sqlite_engine(tmp_path / "catalog.db")
    catalog = Catalog(engine)
    kb = catalog.create_kb("notes")
    catalog.add_file(_record("f1"))
    good = FileLink(kb.id, "f1", "a.txt", "", "", 0.0)
    orphan = FileLink(kb.id, "missing", "b.txt", "", "", 0.0)  # no such file: refused
    with pytest.raises(IntegrityError):
        catalog.add_links([good, orphan])
    assert catalog.links(kb_ids=[kb.id]) == []
    with engine.connect() as connection:
        assert connection.connection.driver_connection.isolation_level == ""  # type: ignore[union-attr]
    engine.dispose()


def _record(file_id: str) -> FileRecord:
    return FileRecord(file_id, "a" * 64, "a" * 64, "a.txt", "text/plain", 1, 1, "indexed", 0.0)
