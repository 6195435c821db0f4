"""A KB path's folder: relative paths (a connector's, an upload into a folder) have one;
absolute paths (files ingested from the server's disk), URLs and upload keys do not, so a
server path never shows in a folder tree or a citation."""

from __future__ import annotations

import pytest

from citewell.app import Citewell
from citewell.catalog.folders import clean_folder, folder_of
from citewell.errors import InvalidInput
from citewell.types import SearchMode


@pytest.mark.parametrize(
    ("path", "folder"),
    [
        ("docs/api/auth.md", "docs/api"),
        ("readme.md", ""),
        ("upload:0123abcd", ""),
        ("/srv/share/docs/a.md", ""),
        ("https://example.org/blog/post", ""),
        ("C:\\Users\\ann\\a.md", ""),
        ("team/upload:0123abcd", "team"),
    ],
)
def test_only_relative_paths_have_folders(path: str, folder: str) -> None:
    assert folder_of(path) == folder


@pytest.mark.parametrize("bad", ["../etc", "a/../b", "a/./b"])
def test_folder_paths_have_no_dot_parts(bad: str) -> None:
    with pytest.raises(InvalidInput):
        clean_folder(bad)


def test_files_ingested_from_disk_stay_at_the_top_without_server_paths(
    app: Citewell, tmp_path
) -> None:
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "owls.md").write_text("Owls hunt at night.")
    app.ingest([tmp_path / "deep"], "kb")
    (hit,) = app.search("owls hunt", ["kb"], SearchMode.BM25, 1)
    assert hit.chunk.file_name == "owls.md"
    assert app.catalog.folders.all(app.kb_id("kb")) == []
    (entry,) = app.catalog.folders.entries(app.kb_id("kb"), "")
    assert entry.folder == "" and entry.filename == "owls.md"


def test_moves_never_overwrite_and_folders_keep_their_ids(app: Citewell) -> None:
    from citewell.errors import PathTaken

    app.ingest_texts([("a.md", "Alpha."), ("b.md", "Beta.")], "kb")
    kb = app.kb_id("kb")
    folders = app.catalog.folders
    docs, made = folders.make(kb, "docs/api", "")
    assert made and [f.path for f in folders.all(kb)] == ["docs", "docs/api"]
    a, b = sorted(folders.entries(kb, ""), key=lambda e: e.path)
    moved = folders.move_entry(kb, a.entry_id, "docs/api/a.md")
    assert (moved.entry_id, moved.file_id) == (a.entry_id, a.file_id)
    with pytest.raises(PathTaken):
        folders.move_entry(kb, b.entry_id, "docs/api/a.md")
    renamed = folders.move(kb, docs.id, "manual/api")
    assert renamed.id == docs.id
    assert [e.path for e in folders.entries(kb, "manual/api")] == ["manual/api/a.md"]
    assert [f.path for f in folders.all(kb)] == ["docs", "manual", "manual/api"]
    with pytest.raises(InvalidInput):
        folders.move(kb, folders.all(kb)[1].id, "manual/api/inner")  # into itself
    (hit,) = app.search("Alpha", ["kb"], SearchMode.BM25, 1)
    assert hit.chunk.file_name == "manual/api/a.md"


def test_uploads_never_added_are_dropped_after_a_day(app: Citewell) -> None:
    import time

    from citewell.catalog.uploads import HOLD_SECONDS

    uploads = app.uploads
    old = uploads.add("u1", "old.txt", "text/plain", b"old", {})
    kept = uploads.add("u1", "new.txt", "text/plain", b"new", {})
    added = uploads.add("u1", "added.txt", "text/plain", b"added", {})
    uploads.became(added.id, "f" * 32)
    from sqlalchemy import update

    from citewell.db.models import UploadRow

    with app.catalog.engine.begin() as db:
        db.execute(
            update(UploadRow)
            .where(UploadRow.id.in_([old.id, added.id]))
            .values(created_at=time.time() - HOLD_SECONDS - 1)
        )
    assert uploads.purge() == 1
    assert uploads.get(old.id, "u1") is None and uploads.read(old.id) is None
    assert uploads.read(kept.id) == b"new"
    assert uploads.get(added.id, "u1").file_id == "f" * 32  # its id still names the file
    assert uploads.get(kept.id, "someone-else") is None
