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
