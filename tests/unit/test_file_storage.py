"""Stored texts keep where their pages and headings lie, for the viewer."""

from __future__ import annotations

from citewell.blobs.directory import DirectoryBlobs
from citewell.catalog.storage import FileStorage
from citewell.types import Section


def test_sections_round_trip_and_go_with_the_file(tmp_path):
    storage = FileStorage(DirectoryBlobs(tmp_path))
    sections = [Section(0, 10, 1, ("Intro",)), Section(10, 25, 2, ("Intro", "Näher"))]
    storage.put("abc123", b"original", "x" * 25, sections)
    assert storage.sections("abc123") == sections
    assert storage.file_ids() == {"abc123"}
    storage.delete("abc123")
    assert storage.sections("abc123") == []
    assert list(tmp_path.iterdir()) == []


def test_a_file_stored_before_sections_were_kept_has_none(tmp_path):
    storage = FileStorage(DirectoryBlobs(tmp_path))
    storage.put("old1", b"o", "text")
    (tmp_path / "old1.sections.json").unlink()
    assert storage.sections("old1") == []
    assert storage.text("old1") == "text"
