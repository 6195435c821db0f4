"""A data dir made before a column existed opens with the column added, rows intact."""

import sqlite3

from citewell.catalog import Catalog, sqlite_engine

OLD_FILES_TABLE = """CREATE TABLE files (
    id VARCHAR(32) PRIMARY KEY, sha256 VARCHAR(64) UNIQUE, text_sha256 VARCHAR(64),
    name VARCHAR(500), mime_type VARCHAR(100), size INTEGER, chunk_count INTEGER,
    status VARCHAR(20), created_at FLOAT)"""


def test_files_from_before_sources_read_as_uploads(tmp_path):
    path = tmp_path / "citewell.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(OLD_FILES_TABLE)
        db.execute(
            "INSERT INTO files VALUES ('f1', 'abc', 'def', 'a.txt', 'text/plain', 3, 1, "
            "'indexed', 1.0)"
        )
    catalog = Catalog(sqlite_engine(path))
    record = catalog.get_file("f1")
    assert record is not None and record.name == "a.txt"
    assert record.source == "upload" and record.url == ""
    Catalog(sqlite_engine(path))  # opening again changes nothing
    with sqlite3.connect(path) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(files)")]
    assert columns.count("source") == 1 and columns.count("url") == 1
