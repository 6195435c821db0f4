"""A data dir made before a column existed opens with the column added, rows intact."""

import sqlite3

from citewell.catalog import Catalog
from citewell.db import sqlite_engine

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


OLD_KB_TABLES = """
CREATE TABLE knowledge_bases (
    id VARCHAR(32) NOT NULL, name VARCHAR(200) NOT NULL, description TEXT NOT NULL,
    created_at FLOAT NOT NULL, updated_at FLOAT NOT NULL, owner_id VARCHAR(32) DEFAULT '' NOT NULL,
    PRIMARY KEY (id), UNIQUE (name));
CREATE TABLE files (
    id VARCHAR(32) PRIMARY KEY, sha256 VARCHAR(64) UNIQUE, text_sha256 VARCHAR(64),
    name VARCHAR(500), mime_type VARCHAR(100), size INTEGER, chunk_count INTEGER,
    status VARCHAR(20), created_at FLOAT);
CREATE TABLE knowledge_base_files (
    kb_id VARCHAR(32) NOT NULL, path VARCHAR(1000) NOT NULL, file_id VARCHAR(32) NOT NULL,
    added_at FLOAT NOT NULL, PRIMARY KEY (kb_id, path),
    FOREIGN KEY(kb_id) REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    FOREIGN KEY(file_id) REFERENCES files (id));
INSERT INTO knowledge_bases VALUES ('kb1', 'handbook', '', 1.0, 1.0, 'alice');
INSERT INTO files VALUES ('f1', 'abc', 'def', 'a.txt', 'text/plain', 3, 1, 'indexed', 1.0);
INSERT INTO knowledge_base_files VALUES ('kb1', 'upload:f1', 'f1', 2.0);
"""


def test_kb_names_become_unique_per_owner_and_links_keep_their_files(tmp_path):
    path = tmp_path / "citewell.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_KB_TABLES)
    catalog = Catalog(sqlite_engine(path))
    bobs = catalog.create_kb("handbook", owner_id="bob")  # was 'exists already'
    assert bobs.id != "kb1"
    assert [link.name for link in catalog.links(kb_ids=["kb1"])] == [""]  # the file's name
    assert catalog.files_in_kb("kb1")["upload:f1"].name == "a.txt"
    Catalog(sqlite_engine(path))  # opening again changes nothing
    catalog.delete_kb("kb1")  # foreign keys still cascade to the links
    assert catalog.links(kb_ids=["kb1"]) == []
    assert catalog.resolve_kb("handbook").id == bobs.id
