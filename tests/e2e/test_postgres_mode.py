"""Server mode's storage end to end: database_url names PostgreSQL, and the catalog, jobs,
users and the chunks (pgvector + BM25) all live there; the data dir keeps only files."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from citewell.app import Citewell
from citewell.config import Settings
from citewell.stores.postgres.store import PostgresChunkStore
from citewell.types import ChunkFilter, SearchMode

pytestmark = pytest.mark.e2e


def test_ingest_search_and_check_with_everything_in_postgresql(
    tmp_path, postgres, onnx_embedder, shared_docs
):
    url = postgres.create_database()
    settings = Settings.load(data_dir=tmp_path / "data", database_url=url)
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    assert isinstance(app.store, PostgresChunkStore)
    kb = app.create_kb("docs")
    report = app.ingest([shared_docs / "wiki_duck.html", shared_docs / "codeblock.md"], kb.id)
    assert report.files_failed == 0 and report.files_indexed == 2
    for mode in SearchMode:
        hits = app.search("Where do ducks live?", [kb.id], mode, 3)
        assert hits and "duck" in hits[0].chunk.text.lower(), mode
    assert app.check(recall_samples=0).problems == 0
    assert not (tmp_path / "data" / "citewell.sqlite").exists()
    assert not (tmp_path / "data" / "lancedb").exists()
    tables = set(inspect(app.catalog.engine).get_table_names())
    assert {"knowledge_bases", "jobs", "users", app.store.table} <= tables
    # A second process on the same database sees the same KB and chunks.
    again = Citewell.from_settings(settings, embedder=onnx_embedder)
    assert again.catalog.resolve_kb("docs").file_count == 2
    where = ChunkFilter(kb_ids=(kb.id,))
    assert again.store.count(where) == app.store.count(where) > 0


def _plain_role(url: str) -> str:
    """``url`` for a new login role that owns nothing and is no superuser (as a hosted
    database hands out), allowed to make tables in the public schema."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("CREATE ROLE plain LOGIN")
        admin.execute("GRANT ALL ON SCHEMA public TO plain")
    return url.replace("postgres@", "plain@", 1)


def test_a_role_that_may_not_create_pgvector_is_told_the_sql_to_run(tmp_path, postgres):
    """An operator's empty database without pgvector: the server stops with one message
    naming the statement to run (no traceback), and starts once an administrator ran it."""
    import subprocess
    import sys

    import psycopg

    from citewell.errors import ConfigError
    from citewell.stores.registry import open_chunk_store

    url = postgres.create_database(vector=False)
    plain = _plain_role(url)
    command = [sys.executable, "-m", "citewell", "--data-dir", str(tmp_path / "data")]
    env = {"CITEWELL_DATABASE_URL": plain, "CITEWELL_AUTH": "none", "PATH": "/usr/bin:/bin"}
    refused = subprocess.run(
        [*command, "serve", "--workers", "2", "--port", "1"],
        env=env,
        capture_output=True,
        check=False,
    )
    stderr = refused.stderr.decode()
    assert refused.returncode == 1 and "Traceback" not in stderr, stderr
    database = url.rsplit("/", 1)[1]
    assert f'psql -d {database} -c "CREATE EXTENSION vector;"' in stderr
    assert "permission denied to create extension" in stderr
    settings = Settings.load(data_dir=tmp_path / "data", database_url=plain)
    with pytest.raises(ConfigError, match="CREATE EXTENSION vector"):
        open_chunk_store(settings, "chunks_t", 8)  # what one process opens
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")
    store = open_chunk_store(settings, "chunks_t", 8)
    assert store.count(ChunkFilter()) == 0
