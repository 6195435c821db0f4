"""Where originals and extracted texts live, named by file id, in the configured file store
(citewell.blobs: the data dir's ``files/`` or an S3 bucket). Blob names are those the data
dir has always used, so a directory and a bucket hold the same layout:
``{id}.original``, ``{id}.txt``, ``{id}.sections.json``, ``staging/{job id}``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from citewell.blobs import BlobStore
from citewell.types import Section

KINDS = ("original", "txt", "sections.json")
STAGING = "staging"
UPLOADS = "uploads"  # catalog.uploads: bytes held for their uploader
FOLDERS = ("", STAGING, UPLOADS)  # everything a file store holds


def _file_blob(file_id: str, kind: str) -> str:
    if not file_id.isalnum():
        raise ValueError(f"not a file id: {file_id!r}")
    return f"{file_id}.{kind}"


def _staged_blob(job_id: str) -> str:
    if not job_id.isalnum():
        raise ValueError(f"not a job id: {job_id!r}")
    return f"{STAGING}/{job_id}"


def _section_row(section: Section) -> list[Any]:
    """[start, end, page, headings], then for PDF pages [boxes], [running lines]."""
    row: list[Any] = [section.start, section.end, section.page, list(section.headings)]
    if section.boxes or section.running:
        row += [[list(b) for b in section.boxes], list(section.running)]
    return row


def _section(row: list[Any]) -> Section:
    start, end, page, headings, *rest = row  # older files: the first four only
    boxes = tuple((b[0], b[1], b[2], b[3], b[4], b[5]) for b in rest[0]) if rest else ()
    running = tuple(rest[1]) if len(rest) > 1 else ()
    return Section(start, end, page, tuple(headings), boxes, running)


class FileStorage:
    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        # A store may write a blob nothing is stored at more cheaply (DirectoryBlobs).
        self._write_new = getattr(blobs, "write_new", blobs.write)

    @property
    def where(self) -> str:
        return self.blobs.where

    def put(
        self, file_id: str, original: bytes, text: str, sections: Sequence[Section] = ()
    ) -> None:
        """Each blob is written whole (a reader never sees half of one); the text last but
        one and its outline last, so a file with an outline has all three. ``sections``
        (where pages and headings lie in the text) are for the viewer. An original that is
        its text is not written twice: its record says so (``FileRecord.text_is_original``),
        and ``original`` reads the text. Creating a file was most of an import's time."""
        data = text.encode("utf-8")
        if original != data:
            self.blobs.write(_file_blob(file_id, "original"), original)
        self.blobs.write(_file_blob(file_id, "txt"), data)
        if not sections:  # none is read as none: a blob less to write (an import's files)
            self.blobs.remove(_file_blob(file_id, "sections.json"))
            return
        outline = json.dumps([_section_row(s) for s in sections])
        self.blobs.write(_file_blob(file_id, "sections.json"), outline.encode("utf-8"))

    def put_new_text(self, file_id: str, text: str) -> None:
        """A text that is its own original, for a file no record names yet (an import's):
        one blob, created where the store can (``write_new``). Nothing is removed first: at
        an id no record names, an outline can only be a crashed write's leftover of the
        same bytes (the id is their digest), which ``check --repair`` deletes; and removing
        a missing blob still takes the directory's lock the writing threads wait on
        (journal, "Fragments an import need not compact")."""
        self._write_new(_file_blob(file_id, "txt"), text.encode("utf-8"))

    def text(self, file_id: str) -> str | None:
        data = self.blobs.read(_file_blob(file_id, "txt"))
        return None if data is None else data.decode("utf-8")

    def sections(self, file_id: str) -> list[Section]:
        """Pages and headings of the text; empty for files stored before they were kept."""
        data = self.blobs.read(_file_blob(file_id, "sections.json"))
        if data is None:
            return []
        return [_section(row) for row in json.loads(data)]

    def original(self, file_id: str, is_text: bool = False) -> bytes | None:
        """The file's bytes as they came; ``is_text``: they are its text (its record's
        ``text_is_original``), stored once, as the text (files stored before have both)."""
        data = self.blobs.read(_file_blob(file_id, "original"))
        if data is None and is_text:
            return self.blobs.read(_file_blob(file_id, "txt"))
        return data

    # --- uploads waiting for their ingest job (kept until it succeeds, for retries) ----------
    def stage(self, job_id: str, data: bytes) -> None:
        self.blobs.write(_staged_blob(job_id), data)

    def staged(self, job_id: str) -> bytes | None:
        return self.blobs.read(_staged_blob(job_id))

    def is_staged(self, job_id: str) -> bool:
        return self.blobs.exists(_staged_blob(job_id))

    def staged_times(self) -> dict[str, float]:
        """Job id → when its upload was staged, for every staged upload."""
        return {b.name: b.modified for b in self.blobs.listing(STAGING) if b.name.isalnum()}

    def unstage(self, job_id: str) -> None:
        self.blobs.remove(_staged_blob(job_id))

    def stored(self) -> dict[str, tuple[set[str], float]]:
        """File id → which of original, txt, sections.json are stored for it, and when the
        last of them was written."""
        found: dict[str, tuple[set[str], float]] = {}
        for blob in self.blobs.listing():
            file_id, _, kind = blob.name.partition(".")
            if kind in KINDS and file_id.isalnum():
                kinds, written = found.get(file_id, (set(), 0.0))
                found[file_id] = (kinds | {kind}, max(written, blob.modified))
        return found

    def stored_kinds(self) -> dict[str, set[str]]:
        """File id → which of original, txt, sections.json are stored for it."""
        return {file_id: kinds for file_id, (kinds, _) in self.stored().items()}

    def file_ids(self) -> set[str]:
        """Ids of every file with a stored original or text."""
        return {i for i, kinds in self.stored_kinds().items() if kinds & {"original", "txt"}}

    def delete(self, file_id: str) -> None:
        for kind in KINDS:
            self.blobs.remove(_file_blob(file_id, kind))
