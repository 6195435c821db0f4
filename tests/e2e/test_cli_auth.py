"""`citewell user` and `citewell key` as a user runs them: a real process, a real data dir."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


def run(data, *args, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "citewell", "--data-dir", str(data), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_first_admin_then_a_scoped_key_then_revoke(tmp_path):
    data = tmp_path / "data"
    made = run(
        data, "user", "create", "ada", "--admin", "--password-stdin", stdin="a long secret\n"
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("Created admin ada (")
    assert run(data, "kb", "create", "handbook").returncode == 0
    created = run(data, "key", "create", "--user", "ada", "--kb", "handbook", "--read-only")
    assert created.returncode == 0, created.stderr
    plain = created.stdout.strip()
    assert plain.startswith("cw_") and "shown once" in created.stderr
    listed = json.loads(run(data, "key", "list", "--json").stdout)
    assert len(listed) == 1 and listed[0]["read_only"] and listed[0]["revoked_at"] == 0
    assert plain not in json.dumps(listed)  # the key itself is never shown again
    revoked = run(data, "key", "revoke", listed[0]["id"])
    assert revoked.returncode == 0 and "Revoked" in revoked.stdout
    assert "revoked" in run(data, "key", "list").stdout
    users = json.loads(run(data, "user", "list", "--json").stdout)
    assert [(u["name"], u["role"]) for u in users] == [("ada", "admin")]


def test_a_password_for_a_user_made_without_one(tmp_path):
    from citewell.auth import AuthStore
    from citewell.db import sqlite_engine

    data = tmp_path / "data"
    assert run(data, "user", "create", "admin", "--admin", "--no-password").returncode == 0
    set_ = run(data, "user", "password", "admin", "--password-stdin", stdin="a long secret\n")
    assert set_.returncode == 0 and "Set the password of admin" in set_.stdout
    users = AuthStore(sqlite_engine(data / "citewell.sqlite"))
    assert users.authenticate("admin", "a long secret") is not None
    nobody = run(data, "user", "password", "zed", "--password-stdin", stdin="a long secret\n")
    assert nobody.returncode == 1 and "citewell user list" in nobody.stderr


def test_mistakes_get_a_message_that_says_what_to_do(tmp_path):
    data = tmp_path / "data"
    short = run(data, "user", "create", "bob", "--password-stdin", stdin="short\n")
    assert short.returncode == 1 and "at least 10 characters" in short.stderr
    nobody = run(data, "key", "create", "--user", "zed")
    assert nobody.returncode == 1 and "citewell user list" in nobody.stderr
    assert "citewell user create NAME --admin" in run(data, "user", "list").stdout


def test_share_a_cli_made_kb_with_a_group_then_take_it_back(tmp_path):
    from citewell.auth import AuthStore
    from citewell.auth.grants import GrantStore
    from citewell.catalog import Catalog
    from citewell.db import sqlite_engine

    data = tmp_path / "data"
    assert run(data, "user", "create", "eve", "--no-password").returncode == 0
    assert run(data, "kb", "create", "handbook").returncode == 0
    made = run(data, "group", "create", "staff")
    assert made.returncode == 0 and made.stdout.startswith("Created group staff")
    added = run(data, "group", "add", "staff", "eve")
    assert added.returncode == 0 and added.stdout.strip() == "staff: eve"
    shared = run(data, "share", "handbook", "group:staff")
    assert shared.returncode == 0 and "group:staff may now read handbook" in shared.stdout
    engine = sqlite_engine(data / "citewell.sqlite")
    eve = AuthStore(engine).get_user("eve")
    handbook = Catalog(engine).get_kb("handbook")
    assert GrantStore(engine).access(eve).can_read(handbook.id)
    assert run(data, "share", "handbook", "group:staff", "--revoke").returncode == 0
    assert not GrantStore(engine).access(eve).can_read(handbook.id)
    from citewell.auth.audit import AuditLog

    trail = [(e.actor, e.action) for e in AuditLog(engine).find()]
    assert ("local", "grant.set") in trail and ("local", "grant.revoke") in trail
    assert ("local", "user.create") in trail and ("local", "group.add_member") in trail
    wrong = run(data, "share", "handbook", "everyone")
    assert wrong.returncode == 1 and "'user:NAME', 'group:NAME' or 'public'" in wrong.stderr
    # KB actions are recorded by the same service whichever adapter asks: the CLI too.
    assert run(data, "kb", "delete", "handbook").returncode == 0
    trail = [(e.actor, e.action, e.target_id) for e in AuditLog(engine).find()]
    assert ("local", "kb.create", handbook.id) in trail
    assert ("local", "kb.delete", handbook.id) in trail
