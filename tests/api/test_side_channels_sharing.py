"""Side channels through sharing (issue 45, the lesser findings): a share tells the granter
nothing about who exists and can be declined; a shared preset shows only what the grantee
may read. Same server and users as test_side_channels."""

from __future__ import annotations

import httpx
import pytest

from tests.api.test_access import _user_key
from tests.api.test_side_channels import _kb, _text, world  # noqa: F401 (the fixture)

pytestmark = pytest.mark.api


def _share(client: httpx.Client, kb: str, principal: str) -> httpx.Response:
    return client.put(f"/api/v1/knowledge/{kb}/grants", json={"principal": principal})


def test_sharing_tells_nobody_but_admins_whether_a_user_exists(world):  # noqa: F811
    with world.client("bob") as bob:
        kb = _kb(bob, "bob-shares")
        real, unknown = _share(bob, kb, "user:carol"), _share(bob, kb, "user:dora")
        group = _share(bob, kb, "group:no-such-group")
        listed = bob.get(f"/api/v1/knowledge/{kb}/grants").json()
    assert real.status_code == unknown.status_code == group.status_code == 200
    assert real.json() | {"principal": "user:dora"} == unknown.json()
    assert {g["principal"] for g in listed} == {"user:carol", "user:dora", "group:no-such-group"}
    # An admin, who may list users anyway, is told.
    with world.client("admin") as admin:
        assert _share(admin, kb, "user:nobody-at-all").status_code == 404
        # A user made later under that name gets nothing from the grant made before.
        dora = {"Authorization": f"Bearer {_user_key(admin, world.url, 'dora')}"}
    with httpx.Client(base_url=world.url, headers=dora, timeout=60) as client:
        assert client.get(f"/api/v1/knowledge/{kb}").status_code == 404
    with world.client("bob") as bob:
        assert bob.delete(f"/api/v1/knowledge/{kb}/grants/user:dora").status_code == 204
        left = {g["principal"] for g in bob.get(f"/api/v1/knowledge/{kb}/grants").json()}
    assert left == {"user:carol", "group:no-such-group"}


def test_a_share_can_be_declined_by_the_user_it_names(world):  # noqa: F811
    with world.client("alice") as alice:
        kb = _kb(alice, "pushed-on-carol")
        _text(alice, kb, "note.md", "Something Carol never asked for.")
        assert _share(alice, kb, "user:carol").status_code == 200
        assert _share(alice, kb, "public").status_code == 200
    with world.client("carol") as carol:
        assert carol.delete(f"/api/v1/knowledge/{kb}/grants/user:bob").status_code == 403
        assert carol.delete(f"/api/v1/knowledge/{kb}/grants/user:carol").status_code == 204
        # Shared with everyone too: that share is its owner's to remove, and says so.
        again = carol.delete(f"/api/v1/knowledge/{kb}/grants/user:carol")
        assert again.status_code == 409 and "owner" in again.json()["detail"]
    with world.client("alice") as alice:
        left = {g["principal"] for g in alice.get(f"/api/v1/knowledge/{kb}/grants").json()}
    assert left == {"public"}


def test_a_shared_preset_shows_only_the_kbs_the_grantee_reads(world):  # noqa: F811
    with world.client("alice") as alice:
        private, shared = _kb(alice, "preset-private"), _kb(alice, "preset-shared")
        assert _share(alice, shared, "user:bob").status_code == 200
        made = alice.post(
            "/api/v1/models", json={"model": "alice-expert", "knowledge": [private, shared]}
        )
        assert made.status_code == 201, made.text
        preset = made.json()["id"]
        granted = alice.put(
            f"/api/v1/models/{preset}/grants", json={"principal": "user:bob", "permission": "write"}
        )
        assert granted.status_code == 200, granted.text
    with world.client("bob") as bob:
        seen = bob.get(f"/api/v1/models/{preset}").json()
        assert seen["knowledge"] == [shared]
        assert private not in bob.get("/api/v1/models").text
        changed = bob.put(
            f"/api/v1/models/{preset}",
            json={"model": "alice-expert", "knowledge": [shared], "system": "Be brief."},
        )
        assert changed.status_code == 200, changed.text
        assert changed.json()["knowledge"] == [shared]
    with world.client("alice") as alice:  # Bob's change kept the KB he cannot see
        assert alice.get(f"/api/v1/models/{preset}").json()["knowledge"] == [shared, private]
