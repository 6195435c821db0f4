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


def test_a_file_without_sections_stores_no_outline(tmp_path):
    """Files stored before sections were kept, and imported ones, have none to show: no
    blob is written for none (one file less to create an imported file), and one left by
    an earlier put of the same id is removed."""
    storage = FileStorage(DirectoryBlobs(tmp_path))
    storage.put("old1", b"o", "text", [Section(0, 4, 1, ())])
    storage.put("old1", b"o", "text")
    assert not (tmp_path / "old1.sections.json").exists()
    assert storage.sections("old1") == []
    assert storage.text("old1") == "text"
    assert storage.file_ids() == {"old1"}


def test_an_original_that_is_its_text_is_stored_once(tmp_path):
    """Plain text and imported files: the text alone is written, and read as the original
    where the file's record says its bytes are its text; other files keep both."""
    storage = FileStorage(DirectoryBlobs(tmp_path))
    storage.put("same1", "Grüße".encode(), "Grüße")
    storage.put("pdf1", b"%PDF-1.7 ...", "Extracted")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "pdf1.original", "pdf1.txt", "same1.txt",
    ]  # fmt: skip
    assert storage.original("same1", is_text=True) == "Grüße".encode()
    assert storage.original("same1") is None  # a record that says otherwise: lost
    assert storage.original("pdf1", is_text=False) == b"%PDF-1.7 ..."
    assert storage.file_ids() == {"same1", "pdf1"}
