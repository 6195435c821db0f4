"""The file store role's conformance suite. Subclass it and give a fixture ``blobs``: an
empty store of the backend under test (citewell.blobs.BlobStore)."""

from __future__ import annotations

import threading

import pytest

from citewell.blobs import BlobStore


class FileStoreConformance:
    def test_what_is_written_reads_back_whole(self, blobs: BlobStore) -> None:
        data = bytes(range(256)) * 1000
        blobs.write("abc.original", data)
        blobs.write("abc.txt", "Grüße".encode())
        assert blobs.read("abc.original") == data
        assert blobs.read("abc.txt") == "Grüße".encode()
        assert blobs.exists("abc.txt") and isinstance(blobs.where, str) and blobs.where

    def test_a_missing_blob_is_none_and_removing_it_is_no_error(self, blobs: BlobStore) -> None:
        assert blobs.read("nothing.txt") is None
        assert not blobs.exists("nothing.txt")
        blobs.remove("nothing.txt")
        blobs.remove("staging/nothing")

    def test_a_write_replaces_and_a_remove_removes(self, blobs: BlobStore) -> None:
        blobs.write("f1.txt", b"old")
        blobs.write("f1.txt", b"")
        assert blobs.read("f1.txt") == b""  # empty is a blob, not a missing one
        blobs.remove("f1.txt")
        assert blobs.read("f1.txt") is None and not blobs.exists("f1.txt")

    def test_a_listing_names_the_blobs_of_one_folder(self, blobs: BlobStore) -> None:
        blobs.write("a1.txt", b"12345")
        blobs.write("a1.original", b"1")
        blobs.write("staging/job1", b"staged")
        blobs.write("uploads/up1", b"held")
        top = {b.name: b for b in blobs.listing()}
        assert set(top) == {"a1.txt", "a1.original"}
        assert top["a1.txt"].size == 5 and top["a1.txt"].modified > 0
        assert [b.name for b in blobs.listing("staging")] == ["job1"]
        assert [b.name for b in blobs.listing("uploads")] == ["up1"]
        assert list(blobs.listing("empty")) == []

    def test_names_that_could_leave_the_store_are_refused(self, blobs: BlobStore) -> None:
        for bad in ("../x", "/etc/passwd", "a/b/c", "..", "x.tmp", "", "a\\b", "sp ace"):
            with pytest.raises(ValueError):
                blobs.write(bad, b"x")
            with pytest.raises(ValueError):
                blobs.read(bad)

    def test_a_reader_never_sees_part_of_a_write(self, blobs: BlobStore) -> None:
        """Processes share the store: a reader during rewrites gets one whole version."""
        versions = [bytes([n]) * 300_000 for n in range(4)]
        blobs.write("w1.original", versions[0])
        seen: list[bytes | None] = []

        def read_while_written() -> None:
            for _ in range(20):
                seen.append(blobs.read("w1.original"))

        reader = threading.Thread(target=read_while_written)
        reader.start()
        for version in versions[1:] * 3:
            blobs.write("w1.original", version)
        reader.join()
        assert seen and all(found in versions for found in seen)
