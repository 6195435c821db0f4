"""Connectors over the HTTP API of a server with keys: a folder under the allow-list synced
on the server's own job worker, status and counts, credentials that never come back, a
signed push webhook, and another user who cannot see or touch any of it. Folders are granted
to users and groups; a writer of a shared KB may pause and sync the owner's connector but
not re-aim it; no grant reaches the data dir."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import KeyedServer, keyed_server

TOKEN = "ghp_notarealtokenbutsecret123"
HOOK_SECRET = "hook-secret-shared-with-the-forge"


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[tuple[KeyedServer, Path]]:
    allowed = tmp_path_factory.mktemp("shares")
    (allowed / "team").mkdir()
    (allowed / "team" / "handbook.md").write_text(
        "# Handbook\n\nNew staff get a Zebrafinch badge on their first day."
    )
    (allowed / "team" / "policies").mkdir()
    (allowed / "team" / "policies" / "travel.txt").write_text("Trains are booked two weeks ahead.")
    (allowed / "sales").mkdir()
    (allowed / "sales" / "prices.md").write_text("# Prices\n\nA Zebrafinch badge costs 4 euros.")
    outer = tmp_path_factory.mktemp("server-home")  # granted to all; holds the data dir
    data = outer / "data"
    (data / "notes").mkdir(parents=True)  # beside the data dir's own content, inside it
    grants = f"{allowed}=alice, {allowed / 'sales'}=@sales, {outer}=*"
    with keyed_server(
        data,
        onnx_embedder,
        fake_llm,
        ("alice", "bob", "carol"),
        connector_allowed_paths=grants,
        connector_watch=False,  # each sync here is asked for; watching: test_folder_watch
    ) as server:
        yield server, allowed


def wait_synced(client: httpx.Client, path: str, runs_before: float = 0.0) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        body = client.get(path).json()
        status = body["status"]
        if status["state"] in ("ok", "failed") and status["finished_at"] > runs_before:
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.1)


def shown(server: Any, body: dict[str, Any]) -> str:
    """A connector's whole status and the server's sync jobs, for a failed assertion: as a
    string, which pytest prints whole (a dict it cuts short, hiding the counts)."""
    jobs = [(j.name, j.state, j.attempts, j.created_at) for j in server.app.jobs.find()
            if j.operation == "sync"]  # fmt: skip
    return json.dumps({"status": body["status"], "sync_jobs": jobs}, default=str)


def test_a_folder_connector_syncs_on_the_server(world) -> None:
    server, allowed = world
    with server.client("alice") as alice:
        kb = alice.post("/api/v1/knowledge", json={"name": "handbook"}).json()
        made = alice.post(
            f"/api/v1/knowledge/{kb['id']}/connectors",
            json={
                "kind": "folder",
                "target": str(allowed / "team"),
                "options": {"folder": "team"},
                "credentials": {"webhook_secret": HOOK_SECRET},
            },
        )
        assert made.status_code == 201, made.text
        base = f"/api/v1/knowledge/{kb['id']}/connectors/{made.json()['id']}"
        body = wait_synced(alice, base)
        assert body["status"]["state"] == "ok", body
        # The whole status on failure: "unchanged" 2 would say a second run was seen.
        assert (body["status"]["added"], body["status"]["failed"]) == (2, 0), shown(server, body)
        files = alice.get(f"/api/v1/knowledge/{kb['id']}").json()["files"]
        assert len(files) == 2
        hits = alice.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": [kb["id"]], "query": "What badge do new staff get?", "k": 1},
        ).json()
        assert "Zebrafinch" in hits["documents"][0][0]

        (allowed / "team" / "policies" / "travel.txt").unlink()
        finished = body["status"]["finished_at"]
        queued = alice.post(f"{base}/sync")
        assert queued.status_code == 202 and queued.json()["operation"] == "sync"
        body = wait_synced(alice, base, finished)
        assert body["status"]["deleted"] == 1
        assert len(alice.get(f"/api/v1/knowledge/{kb['id']}").json()["files"]) == 1

        paused = alice.patch(base, json={"paused": True, "interval": 120}).json()
        assert paused["paused"] is True and paused["interval"] == 120


def test_credentials_go_in_and_never_come_out(world) -> None:
    server, allowed = world
    with server.client("alice") as alice:
        kb = alice.post("/api/v1/knowledge", json={"name": "secrets"}).json()
        made = alice.post(
            f"/api/v1/knowledge/{kb['id']}/connectors",
            json={
                "kind": "folder",
                "target": str(allowed / "team"),
                "name": "s",
                "credentials": {"token": TOKEN},
            },
        )
        assert made.status_code == 201
        listed = alice.get(f"/api/v1/knowledge/{kb['id']}/connectors")
        for response in (made, listed):
            assert TOKEN not in response.text
        assert listed.json()[0]["has_credentials"] is True
        assert listed.json()[0]["credentials"] == []
        stored = server.app.connectors.store.of_kbs([kb["id"]])[0]
        assert stored.has_credentials
        assert server.app.connectors.store.credentials(stored.id) == {"token": TOKEN}
        from sqlalchemy import text

        with server.app.catalog.engine.connect() as db:
            raw = db.execute(text("SELECT secret FROM connectors")).scalars().all()
        assert raw and all(TOKEN not in value for value in raw)  # encrypted at rest


def test_another_user_cannot_see_or_touch_a_connector(world) -> None:
    server, allowed = world
    with server.client("alice") as alice, server.client("bob") as bob:
        kb = alice.post("/api/v1/knowledge", json={"name": "private-sync"}).json()
        made = alice.post(
            f"/api/v1/knowledge/{kb['id']}/connectors",
            json={"kind": "folder", "target": str(allowed / "team")},
        ).json()
        base = f"/api/v1/knowledge/{kb['id']}/connectors"
        missing = bob.get(f"{base}/{'0' * 32}")
        attempts = [
            bob.get(base),
            bob.get(f"{base}/{made['id']}"),
            bob.patch(f"{base}/{made['id']}", json={"paused": True}),
            bob.post(f"{base}/{made['id']}/sync"),
            bob.delete(f"{base}/{made['id']}"),
            bob.post(base, json={"kind": "folder", "target": str(allowed / "team")}),
        ]
        for response in attempts:
            assert response.status_code == missing.status_code == 404, response.text
            assert response.json()["code"] == missing.json()["code"]
        # Bob's own KB: a folder outside the allow-list, /etc, and loopback git are refused.
        own = bob.post("/api/v1/knowledge", json={"name": "bobs"}).json()
        mine = f"/api/v1/knowledge/{own['id']}/connectors"
        for target, status in (
            ("/etc", 403),
            (str(allowed / ".."), 403),
            (f"{allowed}/../../etc", 403),
        ):
            response = bob.post(mine, json={"kind": "folder", "target": target})
            assert response.status_code == status, response.text
        response = bob.post(mine, json={"kind": "git", "target": "http://127.0.0.1:9/x.git"})
        assert response.status_code == 403 and response.json()["code"] == "url_blocked"
        response = bob.post(mine, json={"kind": "git", "target": f"file://{allowed}/../x"})
        assert response.status_code == 403
        response = bob.post(
            mine, json={"kind": "folder", "target": str(allowed), "options": {"x": "1"}}
        )
        assert response.status_code == 400
        assert alice.get(f"{base}/{made['id']}").status_code == 200


def test_a_signed_push_webhook_queues_a_sync(world) -> None:
    server, allowed = world
    with server.client("alice") as alice:
        kb = alice.post("/api/v1/knowledge", json={"name": "hooked"}).json()
        made = alice.post(
            f"/api/v1/knowledge/{kb['id']}/connectors",
            json={
                "kind": "folder",
                "target": str(allowed / "team"),
                "credentials": {"webhook_secret": HOOK_SECRET},
            },
        ).json()
        wait_synced(alice, f"/api/v1/knowledge/{kb['id']}/connectors/{made['id']}")
    body = json.dumps({"ref": "refs/heads/main", "commits": []}).encode()
    signature = "sha256=" + hmac.new(HOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    hook = f"/api/v1/connectors/{made['id']}/webhook"
    with httpx.Client(base_url=server.url, timeout=30) as forge:  # no key: the forge
        wrong = forge.post(hook, content=body, headers={"X-Hub-Signature-256": "sha256=00"})
        unknown = forge.post(
            f"/api/v1/connectors/{'0' * 32}/webhook",
            content=body,
            headers={"X-Hub-Signature-256": signature},
        )
        assert wrong.status_code == unknown.status_code == 404
        assert wrong.json()["code"] == unknown.json()["code"]
        github = forge.post(hook, content=body, headers={"X-Hub-Signature-256": signature})
        assert github.status_code == 202 and github.json()["operation"] == "sync"
        gitlab = forge.post(hook, content=body, headers={"X-Gitlab-Token": HOOK_SECRET})
        assert gitlab.status_code == 202


def test_deleting_a_connector_keeps_or_removes_its_files(world) -> None:
    server, allowed = world
    with server.client("alice") as alice:
        for delete_files, left in ((False, 2), (True, 0)):
            kb = alice.post("/api/v1/knowledge", json={"name": f"del-{delete_files}"}).json()
            (allowed / "team" / "policies" / "travel.txt").write_text("Trains, booked early.")
            made = alice.post(
                f"/api/v1/knowledge/{kb['id']}/connectors",
                json={"kind": "folder", "target": str(allowed / "team")},
            ).json()
            base = f"/api/v1/knowledge/{kb['id']}/connectors/{made['id']}"
            status = wait_synced(alice, base)["status"]
            assert status["added"] == 2, shown(server, {"status": status})
            gone = alice.delete(base, params={"delete_files": delete_files})
            assert gone.status_code == 200 and gone.json()["files_removed"] == 2 - left
            assert len(alice.get(f"/api/v1/knowledge/{kb['id']}").json()["files"]) == left
            assert alice.get(base).status_code == 404


def _connector(client: httpx.Client, kb: str, target: str, **extra: Any) -> httpx.Response:
    return client.post(f"/api/v1/knowledge/{kb}/connectors", json={"target": target} | extra)


def test_folders_are_granted_to_users_and_groups_checked_at_every_sync(world) -> None:
    server, allowed = world
    with server.client("bob") as bob, server.client("admin") as admin:
        kb = bob.post("/api/v1/knowledge", json={"name": "bob-folders"}).json()["id"]
        team = _connector(bob, kb, str(allowed / "team"), kind="folder")  # alice's grant only
        missing = _connector(bob, kb, str(allowed / "team" / "nowhere"), kind="folder")
        assert team.status_code == missing.status_code == 403, team.text
        assert team.json()["code"] == missing.json()["code"]  # nothing says it exists
        assert _connector(bob, kb, str(allowed / "sales"), kind="folder").status_code == 403
        assert admin.post("/api/v1/groups", json={"name": "sales"}).status_code == 201
        joined = admin.post("/api/v1/groups/sales/members", json={"user": "bob"})
        assert joined.status_code == 201, joined.text
        made = _connector(bob, kb, str(allowed / "sales"), kind="folder")
        assert made.status_code == 201, made.text
        base = f"/api/v1/knowledge/{kb}/connectors/{made.json()['id']}"
        assert wait_synced(bob, base)["status"]["added"] == 1
        assert admin.delete("/api/v1/groups/sales/members/bob").status_code in (200, 204)
        runs_before = time.time()
        assert bob.post(f"{base}/sync").status_code == 202
        after = wait_synced(bob, base, runs_before)["status"]
        assert after["state"] == "failed" and "connector_allowed_paths" in after["message"]


def test_no_grant_reaches_the_data_dir(world) -> None:
    server, _ = world
    data = server.settings.storage.data_dir
    with server.client("alice") as alice:
        kb = alice.post("/api/v1/knowledge", json={"name": "data-dir"}).json()["id"]
        for target in (data.parent, data, data / "notes"):
            for options in ({}, {"include": "files/*.txt"}):
                refused = _connector(alice, kb, str(target), kind="folder", options=options)
                assert refused.status_code == 403, (target, refused.text)
                assert "data" in refused.json()["detail"]
        as_git = _connector(alice, kb, f"file://{data}", kind="git")
        assert as_git.status_code == 403


def test_a_writer_may_pause_and_sync_but_not_re_aim_the_owners_connector(world) -> None:
    server, allowed = world
    with server.client("alice") as alice, server.client("carol") as carol:
        kb = alice.post("/api/v1/knowledge", json={"name": "shared-sync"}).json()["id"]
        shared = alice.put(
            f"/api/v1/knowledge/{kb}/grants",
            json={"principal": "user:carol", "permission": "write"},
        )
        assert shared.status_code == 200, shared.text
        made = _connector(
            alice, kb, str(allowed / "team"), kind="folder", options={"exclude": "policies/"}
        ).json()
        base = f"/api/v1/knowledge/{kb}/connectors/{made['id']}"
        for change in (
            {"options": {}},  # drops the owner's exclude globs
            {"options": {"exclude": "policies/", "include": "*.txt"}},
            {"credentials": {"token": "carols-own"}},
        ):
            refused = carol.patch(base, json=change)
            assert refused.status_code == 403 and refused.json()["code"] == "forbidden", change
        assert alice.get(base).json()["options"] == {"exclude": "policies/"}
        for change in ({"paused": True}, {"paused": False}, {"interval": 7200}):
            assert carol.patch(base, json=change).status_code == 200, change
        unchanged = carol.patch(base, json={"options": {"exclude": "policies/"}, "interval": 3600})
        assert unchanged.status_code == 200  # the same options, sent back as the page does
        assert carol.post(f"{base}/sync").status_code == 202
        mine = alice.patch(base, json={"options": {}})
        assert mine.status_code == 200 and mine.json()["options"] == {}
    with server.client("admin") as admin:
        by_admin = admin.patch(base, json={"options": {"exclude": "x/"}})
        assert by_admin.status_code == 200
