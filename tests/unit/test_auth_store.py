"""Users and API keys on a real database: SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from citewell.auth import AuthStore, UserNotFound
from citewell.auth.secrets import hash_password, key_digest, verify_password
from citewell.db.models import ApiKeyRow
from citewell.errors import Conflict, InvalidInput


@pytest.fixture
def store(database) -> AuthStore:
    return AuthStore(database)


def test_passwords_are_salted_argon2_hashes():
    first, second = hash_password("correct horse"), hash_password("correct horse")
    assert first.startswith("$argon2id$") and first != second
    assert verify_password(first, "correct horse")
    assert not verify_password(first, "wrong horse")
    assert not verify_password("", "anything") and not verify_password("garbage", "x")


def test_users_sign_in_with_their_password(store):
    admin = store.create_user("ada", "a long password", role="admin")
    assert admin.is_admin and store.admin_count() == 1
    assert store.authenticate("ada", "a long password") == admin
    assert store.authenticate("ada", "a wrong password") is None
    assert store.authenticate("nobody", "a long password") is None
    keys_only = store.create_user("robot")  # no password: it signs in with keys only
    assert store.authenticate("robot", "") is None
    assert [u.name for u in store.list_users()] == ["ada", "robot"]
    assert store.get_user(keys_only.id) == keys_only


def test_bad_users_are_refused_with_a_reason(store):
    store.create_user("ada", "a long password")
    with pytest.raises(Conflict, match="exists"):
        store.create_user("ada", "another password")
    with pytest.raises(InvalidInput, match="at least 10"):
        store.create_user("bob", "short")
    with pytest.raises(InvalidInput, match="role"):
        store.create_user("eve", "a long password", role="root")
    with pytest.raises(UserNotFound, match="citewell user list"):
        store.get_user("zed")


def test_api_keys_are_shown_once_and_kept_hashed(store, tmp_path):
    user = store.create_user("ada", "a long password")
    key, plain = store.create_key(user.id, "laptop", kb_ids=["kb1"], read_only=True)
    assert plain.startswith("cw_") and len(plain) == 46 and plain.startswith(key.prefix)
    assert key.kb_ids == ("kb1",) and key.read_only and not key.revoked
    found = store.identify(plain)
    assert found is not None and found[0] == user and found[1].id == key.id
    assert store.identify(plain + "x") is None and store.identify("") is None
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    with Session(store.engine) as session:
        row = session.scalar(select(ApiKeyRow))
        assert row.digest == key_digest(plain) and plain not in (row.digest, row.prefix)


def test_revoked_keys_stop_working(store):
    user = store.create_user("ada")
    key, plain = store.create_key(user.id)
    other, other_plain = store.create_key(user.id)
    assert store.revoke_key(key.id).revoked
    assert store.identify(plain) is None
    assert store.identify(other_plain) is not None
    assert [k.revoked for k in store.list_keys(user.id)] == [True, False]
