"""Open WebUI's knowledge and file API on Citewell (decision 0025): a whole incremental sync of
a folder (adds, edits, deletes, nested folders) driven through those routes only, the way
Open WebUI's sync clients drive it; folders (make, rename, move, delete) and moving files
without embedding again; uploads added by id; and Citewell's access on every route: another
user's KB answers like a missing one, a read grant cannot change it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import KeyedServer, keyed_server

pytestmark = pytest.mark.api


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[KeyedServer]:
    data = tmp_path_factory.mktemp("owui-knowledge")
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob")) as server:
        yield server


def manifest(root: Path) -> list[dict[str, Any]]:
    """Open WebUI's manifest of a local folder: folder, name, SHA-256 and size per file."""
    entries = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        folder = path.parent.relative_to(root).as_posix()
        data = path.read_bytes()
        entries.append(
            {
                "path": "" if folder == "." else folder,
                "filename": path.name,
                "checksum": hashlib.sha256(data).hexdigest(),
                "size": len(data),
            }
        )
    return entries


def sync_folder(client: httpx.Client, kb: str, root: Path) -> dict[str, Any]:
    """One incremental sync as an Open WebUI sync client runs it: diff, make the folders,
    upload what is new or changed into its folder, then clean up what is stale."""
    diff = client.post(f"/api/v1/knowledge/{kb}/sync/diff", json={"manifest": manifest(root)})
    assert diff.status_code == 200, diff.text
    plan = diff.json()
    folders = dict(plan["directory_map"])
    for path in plan["mkdir"]:  # parents first
        parent, _, name = path.rpartition("/")
        made = client.post(
            f"/api/v1/knowledge/{kb}/dirs/create",
            json={"name": name, "parent_id": folders.get(parent)},
        )
        assert made.status_code == 200, made.text
        folders[path] = made.json()["id"]
    stale = [m["stale_file_id"] for m in plan["modified"]]
    for item in [*plan["added"], *plan["modified"]]:
        local = root / item["path"] / item["filename"]
        metadata = {"knowledge_id": kb, "directory_id": folders.get(item["path"])}
        sent = client.post(
            "/api/v1/files/",
            files={"file": (item["filename"], local.read_bytes())},
            data={"metadata": json.dumps(metadata)},
        )
        assert sent.status_code == 200, sent.text
        assert sent.json()["data"]["status"] == "completed"
    stale += [d["file_id"] for d in plan["deleted"]]
    cleaned = client.post(
        f"/api/v1/knowledge/{kb}/sync/cleanup", json={"file_ids": stale, "dir_ids": plan["rmdir"]}
    )
    assert cleaned.status_code == 200, cleaned.text
    assert cleaned.json() == {"status": True}
    return plan


def listed(client: httpx.Client, kb: str) -> dict[str, str]:
    """Every file of the KB: folder/name → sha256 (page after page)."""
    found, page = {}, 1
    while True:
        body = client.get(f"/api/v1/knowledge/{kb}/files", params={"page": page}).json()
        for item in body["items"]:
            found[item["path"]] = item["hash"]
        if page * 30 >= body["total"]:
            return found
        page += 1


def search(server: KeyedServer, client: httpx.Client, kb: str, query: str) -> list[str]:
    response = client.post(
        "/api/v1/retrieval/query/collection",
        json={"collection_names": [kb], "query": query, "k": 3},
    )
    assert response.status_code == 200, response.text
    return [text for group in response.json()["documents"] for text in group]


def test_an_incremental_sync_through_open_webuis_routes(world, tmp_path) -> None:
    root = tmp_path / "notes"
    (root / "guides" / "deep").mkdir(parents=True)
    (root / "readme.md").write_text("# Readme\n\nThe office cat is called Marmalade.")
    (root / "guides" / "setup.txt").write_text("Install the Quokka toolkit before the course.")
    (root / "guides" / "deep" / "tuning.md").write_text("Tuning uses the Pelican method.")
    (root / "old.txt").write_text("The old canteen closed in spring.")
    with world.client("alice") as alice:
        made = alice.post("/api/v1/knowledge/create", json={"name": "notes", "description": ""})
        assert made.status_code == 200, made.text
        kb = made.json()["id"]
        first = sync_folder(alice, kb, root)
        assert len(first["added"]) == 4 and first["mkdir"] == ["guides", "guides/deep"]
        assert listed(alice, kb) == {
            "readme.md": _sha(root / "readme.md"),
            "old.txt": _sha(root / "old.txt"),
            "guides/setup.txt": _sha(root / "guides" / "setup.txt"),
            "guides/deep/tuning.md": _sha(root / "guides" / "deep" / "tuning.md"),
        }
        again = sync_folder(alice, kb, root)
        assert again["unmodified_count"] == 4
        assert not (again["added"] or again["modified"] or again["deleted"] or again["mkdir"])

        (root / "guides" / "setup.txt").write_text("Install the Wombat toolkit before the course.")
        (root / "old.txt").unlink()
        (root / "guides" / "deep" / "tuning.md").unlink()
        (root / "guides" / "deep").rmdir()
        (root / "new.md").write_text("Lunch is served at noon on the roof.")
        changed = sync_folder(alice, kb, root)
        assert [m["filename"] for m in changed["modified"]] == ["setup.txt"]
        assert sorted(d["filename"] for d in changed["deleted"]) == ["old.txt", "tuning.md"]
        assert len(changed["rmdir"]) == 1 and changed["unmodified_count"] == 1
        assert listed(alice, kb) == {
            "readme.md": _sha(root / "readme.md"),
            "new.md": _sha(root / "new.md"),
            "guides/setup.txt": _sha(root / "guides" / "setup.txt"),
        }
        assert any("Wombat" in t for t in search(world, alice, kb, "which toolkit to install"))
        cited = alice.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": [kb], "query": "Wombat toolkit", "k": 1},
        ).json()
        assert cited["metadatas"][0][0]["name"] == "guides/setup.txt"  # folder and name
        assert not any("Quokka" in t for t in search(world, alice, kb, "Quokka toolkit"))
        assert not any("canteen" in t for t in search(world, alice, kb, "old canteen"))
        report = world.app.check()
        assert not (report.orphan_chunks or report.missing_chunks or report.files_in_no_kb)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_folders_rename_move_and_delete_without_embedding_again(world) -> None:
    with world.client("alice") as alice:
        kb = alice.post("/api/v1/knowledge/create", json={"name": "tree", "description": ""})
        kb_id = kb.json()["id"]
        docs = alice.post(f"/api/v1/knowledge/{kb_id}/dirs/create", json={"name": "docs"}).json()
        assert docs["parent_id"] is None and docs["knowledge_id"] == kb_id
        again = alice.post(f"/api/v1/knowledge/{kb_id}/dirs/create", json={"name": "docs"})
        assert again.status_code == 400
        api = alice.post(
            f"/api/v1/knowledge/{kb_id}/dirs/create", json={"name": "api", "parent_id": docs["id"]}
        ).json()
        assert api["parent_id"] == docs["id"]
        sent = alice.post(
            "/api/v1/files/",
            files={"file": ("auth.md", b"Tokens expire after ninety minutes.")},
            data={"metadata": json.dumps({"knowledge_id": kb_id, "directory_id": api["id"]})},
        ).json()
        stored = _items(alice, kb_id)[0]  # the stored file behind the entry
        renamed = alice.post(
            f"/api/v1/knowledge/{kb_id}/dirs/{docs['id']}/update", json={"name": "manual"}
        )
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["id"] == docs["id"] and renamed.json()["name"] == "manual"
        assert set(listed(alice, kb_id)) == {"manual/api/auth.md"}
        top = alice.post(
            f"/api/v1/knowledge/{kb_id}/dirs/{api['id']}/update", json={"parent_id": None}
        )
        assert top.json()["parent_id"] is None
        assert set(listed(alice, kb_id)) == {"api/auth.md"}
        moved = alice.post(
            f"/api/v1/knowledge/{kb_id}/file/move",
            json={"file_id": sent["id"], "directory_id": docs["id"]},
        )
        assert moved.json() == {"status": True}
        in_manual = alice.get(
            f"/api/v1/knowledge/{kb_id}/files", params={"directory_id": docs["id"]}
        ).json()
        assert [i["path"] for i in in_manual["items"]] == ["manual/auth.md"]
        assert [b["id"] for b in in_manual["breadcrumbs"]] == [docs["id"]]
        top_level = alice.get(f"/api/v1/knowledge/{kb_id}/files", params={"directory_id": ""})
        assert top_level.json()["items"] == []
        assert {d["name"] for d in top_level.json()["directories"]} == {"api", "manual"}
        after = _items(alice, kb_id)[0]  # moved twice: the same stored file and chunks
        assert (after["file_id"], after["chunk_count"]) == (
            stored["file_id"],
            stored["chunk_count"],
        )
        assert after["id"] == sent["id"]
        into_itself = alice.post(
            f"/api/v1/knowledge/{kb_id}/dirs/{docs['id']}/update",
            json={"parent_id": docs["id"]},
        )
        assert into_itself.status_code == 400
        tree = alice.get(f"/api/v1/knowledge/{kb_id}/folders").json()
        assert [(f["path"], f["parent_id"]) for f in tree] == [("api", None), ("manual", None)]
        native = alice.post(
            f"/api/v1/knowledge/{kb_id}/files",
            params={"folder": "manual/faq"},
            files={"file": ("faq.md", b"Refunds take five working days.")},
        )
        assert native.status_code == 201, native.text
        assert "manual/faq/faq.md" in listed(alice, kb_id)
        gone = alice.delete(f"/api/v1/knowledge/{kb_id}/dirs/{docs['id']}/delete")
        assert gone.json() == {"status": True, "file_ids": []}
        assert set(listed(alice, kb_id)) == {"auth.md", "faq.md"}
        assert [f["path"] for f in alice.get(f"/api/v1/knowledge/{kb_id}/folders").json()] == [
            "api"
        ]
        hits = search(world, alice, kb_id, "when do tokens expire")
        assert any("ninety minutes" in t for t in hits)
        faq = alice.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": [kb_id], "query": "how long do refunds take", "k": 1},
        ).json()
        assert faq["metadatas"][0][0]["name"] == "faq.md"  # moved up: no folder any more


def _items(client: httpx.Client, kb: str) -> list[dict[str, Any]]:
    return client.get(f"/api/v1/knowledge/{kb}/files").json()["items"]


def test_an_upload_waits_until_it_is_added_by_id(world) -> None:
    with world.client("alice") as alice, world.client("bob") as bob:
        kb_id = alice.post(
            "/api/v1/knowledge/create", json={"name": "later", "description": "x"}
        ).json()["id"]
        held = alice.post("/api/v1/files/", files={"file": ("plan.txt", b"The plan is Tangerine.")})
        assert held.status_code == 200, held.text
        upload = held.json()
        assert upload["data"]["status"] == "completed" and upload["path"] is None
        assert alice.get(f"/api/v1/files/{upload['id']}/process/status").json() == {
            "status": "completed"
        }
        assert bob.get(f"/api/v1/files/{upload['id']}/process/status").status_code == 404
        bobs = bob.post("/api/v1/knowledge/create", json={"name": "bobs", "description": ""})
        stolen = bob.post(
            f"/api/v1/knowledge/{bobs.json()['id']}/file/add", json={"file_id": upload["id"]}
        )
        assert stolen.status_code == 400  # not his upload: as if there were none
        held_bytes = world.settings.storage.data_dir / "files" / "uploads" / upload["id"]
        assert held_bytes.is_file()
        added = alice.post(f"/api/v1/knowledge/{kb_id}/file/add", json={"file_id": upload["id"]})
        assert added.status_code == 200, added.text
        assert not held_bytes.exists()  # the KB's store holds the bytes now
        body = added.json()
        assert [f["id"] for f in body["files"]] == [upload["id"]]
        assert body["write_access"] is True and body["user_id"]
        native = alice.get(f"/api/v1/knowledge/{kb_id}").json()
        assert native["file_count"] == 1 and native["write_access"] is True
        assert native["files"][0]["hash"] == native["files"][0]["sha256"]
        removed = alice.post(
            f"/api/v1/knowledge/{kb_id}/file/remove", json={"file_id": upload["id"]}
        )
        assert removed.status_code == 200 and removed.json()["files"] == []
        empty = alice.post("/api/v1/files/", files={"file": ("empty.txt", b"")}).json()
        good = alice.post("/api/v1/files/", files={"file": ("ok.txt", b"Figs ripen late.")})
        batch = alice.post(
            f"/api/v1/knowledge/{kb_id}/files/batch/add",
            json=[{"file_id": good.json()["id"]}, {"file_id": empty["id"]}],
        )
        assert batch.status_code == 200, batch.text  # one unreadable file fails alone
        assert [f["meta"]["name"] for f in batch.json()["files"]] == ["ok.txt"]
        (warning,) = batch.json()["warnings"]["errors"]
        assert warning.startswith(empty["id"]) and "empty" in warning


def test_another_users_kb_answers_like_a_missing_one(world) -> None:
    with world.client("alice") as alice, world.client("bob") as bob:
        kb_id = alice.post(
            "/api/v1/knowledge/create", json={"name": "private", "description": ""}
        ).json()["id"]
        missing = "0" * 32
        for path, body, method in (
            ("/files", None, "GET"),
            ("/file/add", {"file_id": "x"}, "POST"),
            ("/sync/diff", {"manifest": []}, "POST"),
            ("/dirs/create", {"name": "x"}, "POST"),
            ("/reset", None, "POST"),
        ):
            theirs = bob.request(method, f"/api/v1/knowledge/{kb_id}{path}", json=body)
            nothing = bob.request(method, f"/api/v1/knowledge/{missing}{path}", json=body)
            assert theirs.status_code == nothing.status_code, path
            assert theirs.json()["detail"].replace(kb_id, missing) == nothing.json()["detail"]
        listing = bob.get("/api/v1/knowledge/").json()
        assert kb_id not in {k["id"] for k in listing["items"]}
        granted = alice.put(
            f"/api/v1/knowledge/{kb_id}/grants",
            json={"principal": "user:bob", "permission": "read"},
        )
        assert granted.status_code in (200, 201), granted.text
        diff = bob.post(f"/api/v1/knowledge/{kb_id}/sync/diff", json={"manifest": []})
        assert diff.status_code == 403
        files = bob.get(f"/api/v1/knowledge/{kb_id}/files")
        assert files.status_code == 200 and files.json()["total"] == 0
        shared = {k["id"]: k for k in bob.get("/api/v1/knowledge/").json()["items"]}
        assert shared[kb_id]["write_access"] is False
