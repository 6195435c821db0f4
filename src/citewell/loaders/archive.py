"""Zip containers (OOXML, EPUB, ODF): what kind of document a zip is, and a zip-bomb guard."""

from __future__ import annotations

import io
import zipfile
import zlib

from citewell.errors import ParseError

MAX_UNCOMPRESSED = 512 * 1024 * 1024  # bytes a document may expand to
MAX_RATIO = 200  # uncompressed / compressed, over the whole archive

ZIP_KINDS = (
    (
        "word/document.xml",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    (
        "ppt/presentation.xml",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    ("xl/workbook.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    ("META-INF/container.xml", "application/epub+zip"),
)


# what zipfile and zlib raise on damaged archives (found by fuzzing the loaders)
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, ValueError, NotImplementedError, EOFError, OSError)


class Archive:
    """A zip whose damaged entries raise ParseError; a missing entry still raises KeyError."""

    def __init__(self, archive: zipfile.ZipFile, name: str) -> None:
        self.archive = archive
        self.name = name

    def namelist(self) -> list[str]:
        return self.archive.namelist()

    def read(self, entry: str) -> bytes:
        try:
            return self.archive.read(entry)
        except KeyError:
            raise
        except (*ZIP_ERRORS, UnicodeDecodeError) as exc:
            raise ParseError(f"{self.name}: entry {entry!r} is damaged ({exc}).") from exc


def open_zip(data: bytes, name: str) -> Archive:
    """The archive, after checking that it does not expand into a bomb."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except ZIP_ERRORS as exc:
        raise ParseError(f"{name} is not a readable zip container ({exc}).") from exc
    total = sum(info.file_size for info in archive.infolist())
    if total > MAX_UNCOMPRESSED or total > MAX_RATIO * max(1, len(data)):
        raise ParseError(
            f"{name} would expand to {total} bytes from {len(data)}: refused as a likely zip bomb."
        )
    return Archive(archive, name)


def zip_kind(data: bytes) -> str | None:
    """The MIME type of a zip-based document, judged by the entries it holds."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = set(archive.namelist())
        declared = archive.read("mimetype")[:100] if "mimetype" in names else b""
    except (*ZIP_ERRORS, UnicodeDecodeError):
        return None
    if declared.strip() == b"application/vnd.oasis.opendocument.text":  # ODF names itself
        return "application/vnd.oasis.opendocument.text"
    for entry, mime_type in ZIP_KINDS:
        if entry in names:
            return mime_type
    return None
