"""`citewell migrate --to postgresql://…`: an embedded data dir moves into PostgreSQL with
its users, keys, grants, jobs history, cached vectors and chunks; nothing is embedded again,
searches find the same chunks, and the target is never overwritten by accident."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.auth.grants import GrantStore
from citewell.cli import main
from citewell.config import Settings
from citewell.types import ChunkFilter, SearchMode

pytestmark = pytest.mark.e2e

DOCS = [
    ("leave.md", "# Leave\n\nStaff get 25 days of paid leave a year, plus public holidays."),
    ("remote.md", "# Remote work\n\nEveryone may work from home two days a week."),
    ("bikes.md", "# Bicycles\n\nBike racks are behind the east entrance, under the roof."),
]


def test_an_embedded_data_dir_moves_into_postgresql(tmp_path, postgres, onnx_embedder):
    data, url = tmp_path / "data", postgres.create_database()
    # Sentence pairs on: their table moves too, and searches read it in both stores.
    before = Citewell.from_settings(
        Settings.load(data_dir=data, sentence_vectors=True), embedder=onnx_embedder
    )
    pairs = before.spaces.active.sentences
    users, grants = AuthStore(before.catalog.engine), GrantStore(before.catalog.engine)
    ada = users.create_user("ada", password="correct horse battery")
    plain = users.create_key(ada.id, "laptop")[1]
    kb = before.create_kb("handbook", owner_id=ada.id)
    grants.create_group("staff")
    grants.add_member("staff", ada.id)
    grants.grant(kb.id, "group:staff", "read")
    before.ingest_texts(DOCS, kb.id)
    runner = CliRunner()
    shared = runner.invoke(main, ["--data-dir", str(data), "share", kb.id, "user:ada"])
    assert shared.exit_code == 0, shared.output  # an audit event with id 1
    expected = {
        mode: [h.chunk.id for h in before.search("days at home", [kb.id], mode, k=3)]
        for mode in (SearchMode.HYBRID, SearchMode.VECTOR, SearchMode.BM25)
    }
    pairs_before = pairs.count(ChunkFilter())
    assert pairs_before > 0
    before.close()

    moved = runner.invoke(main, ["--data-dir", str(data), "migrate", "--to", url])
    assert moved.exit_code == 0, moved.output
    assert "Moved" in moved.output and f"CITEWELL_DATABASE_URL={url}" in moved.output

    settings = Settings.load(data_dir=data, database_url=url, sentence_vectors=True)
    after = Citewell.from_settings(settings, embedder=onnx_embedder)
    try:
        assert type(after.store).__name__ == "PostgresChunkStore"
        assert after.spaces.active.sentences.count(ChunkFilter()) == pairs_before
        assert sorted(f.name for f in after.files(kb.id)) == sorted(n for n, _ in DOCS)
        for mode, ids in expected.items():
            found = [h.chunk.id for h in after.search("days at home", [kb.id], mode, k=3)]
            assert found == ids, mode
        moved_users = AuthStore(after.catalog.engine)
        user, _key = moved_users.identify(plain)  # the same key still signs in
        assert user.name == "ada"
        assert kb.id in GrantStore(after.catalog.engine).access(user).readable
        assert after.check().problems == 0
        # Nothing to embed again later: every chunk's vector is in the moved cache.
        with after.catalog.engine.connect() as db:
            cached = db.execute(text("SELECT count(*) FROM embedding_cache")).scalar_one()
        assert cached >= len(DOCS)
        # Audited actions go on after the copied events (the id sequence moved past them).
        key = runner.invoke(
            main,
            ["--data-dir", str(data), "key", "create", "--user", "ada", "--name", "moved"],
            env={"CITEWELL_DATABASE_URL": url},
        )
        assert key.exit_code == 0, key.output
        with after.catalog.engine.connect() as db:
            actions = db.execute(text("SELECT action FROM audit_events ORDER BY id")).scalars()
            assert list(actions) == ["grant.set", "key.create"]
    finally:
        after.close()

    again = runner.invoke(main, ["--data-dir", str(data), "migrate", "--to", url])
    assert again.exit_code != 0 and "not empty" in again.output and "--force" in again.output
    forced = runner.invoke(main, ["--data-dir", str(data), "migrate", "--to", url, "--force"])
    assert forced.exit_code == 0, forced.output


def test_revision_0010_repairs_a_database_moved_before_the_fix(postgres):
    """A database `citewell migrate` filled before its sequences were set: the copied audit
    events hold ids 1-3 while the sequence would hand out 1 again."""
    from citewell.auth.access import Access
    from citewell.auth.audit import AuditLog
    from citewell.db import schema
    from citewell.db.engine import url_engine

    engine = url_engine(postgres.create_database())
    schema.ensure_schema(engine)
    with engine.begin() as db:
        for n in (1, 2, 3):
            db.execute(
                text(
                    "INSERT INTO audit_events (id, at, actor_id, actor, action, target_type, "
                    "target_id, detail) VALUES (:n, 0, '', 'local', 'moved', 'kb', 'x', '{}')"
                ),
                {"n": n},
            )
        db.execute(text("UPDATE alembic_version SET version_num = '0009'"))
    schema._migrated.clear()  # this process saw the database current: look again
    schema.ensure_schema(engine)
    AuditLog(engine).record(Access.everything(), "after", "kb", "y")
    with engine.connect() as db:
        ids = db.execute(text("SELECT id FROM audit_events ORDER BY id")).scalars()
        assert list(ids) == [1, 2, 3, 4]
    engine.dispose()
