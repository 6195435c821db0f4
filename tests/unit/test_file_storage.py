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


def test_an_imported_text_is_created_in_place_and_never_cuts_a_blob_short(tmp_path):
    """An import's new texts skip the temporary file and rename (most of the kernel's work
    a file); where a blob is there already (a crashed import's half, or the same text
    stored meanwhile) it is replaced whole, as ``write`` does."""
    storage = FileStorage(DirectoryBlobs(tmp_path))
    storage.put_new_text("new1", "Grüße")
    assert storage.text("new1") == "Grüße"
    (tmp_path / "half1.txt").write_bytes(b"Gr")  # what a crash mid-write leaves
    storage.put_new_text("half1", "Grüße, whole")
    assert storage.text("half1") == "Grüße, whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["half1.txt", "new1.txt"]


def test_a_store_without_write_new_gets_its_atomic_write(tmp_path):
    """A file store that offers no ``write_new`` (a bucket, a plug-in's) writes an
    import's texts with its ``write``."""
    blobs = _ProtocolOnly(DirectoryBlobs(tmp_path))
    storage = FileStorage(blobs)
    storage.put_new_text("new2", "text")
    assert blobs.written == ["new2.txt"] and storage.text("new2") == "text"


class _ProtocolOnly:
    """A file store with the protocol's methods alone, counting its writes."""

    def __init__(self, inner: DirectoryBlobs) -> None:
        self.where, self.written = inner.where, list[str]()
        self.read, self.exists, self.remove = inner.read, inner.exists, inner.remove
        self.listing, self._inner = inner.listing, inner

    def write(self, name: str, data: bytes) -> None:
        self.written.append(name)
        self._inner.write(name, data)
