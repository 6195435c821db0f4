"""Who is calling, answered on the event loop: ``Authenticator.held_access`` answers from
memory alone (no statement) when the key, the user's reach and the rate limit are all kept,
and otherwise gives way, having taken nothing, to ``access`` in a worker thread."""

from __future__ import annotations

import time

import pytest
from sqlalchemy.engine import Engine

from citewell.api.security import Authenticator
from citewell.auth import AuthStore
from citewell.auth.grants import GrantStore
from citewell.auth.rate_limit import DatabaseRateLimiter, MemoryRateLimiter, RateLimiter
from citewell.auth.store import TOUCH_EVERY
from citewell.catalog.catalog import Catalog
from citewell.config import Settings
from citewell.db.models import RateBucketRow
from citewell.errors import RateLimited, Unauthenticated
from tests.conformance.test_change_counter import listening, statements


def authenticator(engine: Engine, tmp_path, limiter: RateLimiter | None = None):  # noqa: ANN001, ANN201
    settings = Settings.load(data_dir=tmp_path, auth="required")
    users, grants = AuthStore(engine), GrantStore(engine)
    return Authenticator(settings, users, grants, limiter or MemoryRateLimiter(600))


def bob_with_a_kb(engine: Engine, auth: Authenticator) -> tuple[str, str]:
    """bob's key and a KB of ada's he may read; the caches listening."""
    ada, bob = auth.users.create_user("ada"), auth.users.create_user("bob")
    _, plain = auth.users.create_key(bob.id)
    kb = Catalog(engine).create_kb("handbook", owner_id=ada.id)
    auth.grants.grant(kb.id, "user:bob", "read")
    listening(engine)
    return plain, kb.id


def used_until_held(auth: Authenticator, plain: str) -> None:
    """Use the key until its access is kept in memory. Using it writes last_used_at, a change
    whose notification comes back on the listener's own time (late on a loaded machine, where
    it once emptied the caches after the next use had filled them)."""
    deadline = time.monotonic() + 10
    while auth.held_access(plain) is None and time.monotonic() < deadline:
        auth.access(plain)
        time.sleep(0.05)


@pytest.mark.parametrize("shared", [False, True], ids=["memory-limit", "database-limit"])
def test_a_warm_caller_is_answered_without_a_statement(database, tmp_path, shared):
    limiter = DatabaseRateLimiter(database, 600) if shared else None
    auth = authenticator(database, tmp_path, limiter)
    plain, kb = bob_with_a_kb(database, auth)
    assert auth.held_access(plain) is None  # nothing kept yet
    assert auth.access(plain).can_read(kb)  # writes last_used_at: a change that empties caches
    used_until_held(auth, plain)
    seen = statements(database)
    held = auth.held_access(plain)
    assert seen == []
    assert held is not None and held.can_read(kb) and held == auth.access(plain)


def test_it_gives_way_to_the_database_for_unknown_revoked_or_stale_keys(
    database, tmp_path, monkeypatch
):
    auth = authenticator(database, tmp_path)
    plain, _ = bob_with_a_kb(database, auth)
    assert auth.held_access("cw_not-a-key") is None
    with pytest.raises(Unauthenticated):
        auth.access("cw_not-a-key")
    key = auth.access(plain).key
    used_until_held(auth, plain)
    assert key is not None and auth.held_access(plain) is not None
    later = time.time() + TOUCH_EVERY + 1  # last_used_at is due to be written again
    monkeypatch.setattr("citewell.auth.store.time.time", lambda: later)
    assert auth.held_access(plain) is None
    seen = statements(database)
    auth.access(plain)
    assert any("UPDATE api_keys" in s for s in seen)
    monkeypatch.undo()
    auth.users.revoke_key(key.id)
    assert auth.held_access(plain) is None
    with pytest.raises(Unauthenticated):
        auth.access(plain)


def test_a_grant_revoked_is_not_answered_from_memory(database, tmp_path):
    auth = authenticator(database, tmp_path)
    plain, kb = bob_with_a_kb(database, auth)
    auth.access(plain)
    auth.access(plain)
    auth.grants.revoke(kb, "user:bob")
    held = auth.held_access(plain)
    assert held is None or not held.can_read(kb)
    assert not auth.access(plain).can_read(kb)


def test_a_claim_is_made_in_a_worker_thread_and_nothing_is_taken_before(database, tmp_path):
    limiter = DatabaseRateLimiter(database, 120)  # claims 2 tokens at a time
    assert not limiter.take_held("key-1")
    with database.connect() as db:
        assert db.execute(RateBucketRow.__table__.select()).all() == []
    limiter.take("key-1")  # claims 2, spends 1
    assert limiter.take_held("key-1")  # the other
    assert not limiter.take_held("key-1")
    with database.connect() as db:
        tokens = db.execute(RateBucketRow.__table__.select()).one().tokens
    assert 117 <= tokens <= 118 + 1  # 2 taken from 120 (plus a second's refill at most)


def test_a_caller_over_its_limit_is_refused_on_the_loop_too(tmp_path):
    limiter = MemoryRateLimiter(3)
    for _ in range(3):
        assert limiter.take_held("key-1")
    with pytest.raises(RateLimited):
        limiter.take_held("key-1")
