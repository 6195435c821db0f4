"""Zip containers (OOXML, EPUB, ODF): what kind of document a zip is, and a zip-bomb guard."""

from __future__ import annotations

import io
import zipfile

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


def open_zip(data: bytes, name: str) -> zipfile.ZipFile:
    """The archive, after checking that it does not expand into a bomb."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ParseError(f"{name} is not a readable zip container ({exc}).") from exc
    total = sum(info.file_size for info in archive.infolist())
    if total > MAX_UNCOMPRESSED or total > MAX_RATIO * max(1, len(data)):
        raise ParseError(
            f"{name} would expand to {total} bytes from {len(data)}: refused as a likely zip bomb."
        )
    return archive


def zip_kind(data: bytes) -> str | None:
    """The MIME type of a zip-based document, judged by the entries it holds."""
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    except (zipfile.BadZipFile, ValueError):
        return None
    if "mimetype" in names:  # ODF says what it is in its first entry
        declared = zipfile.ZipFile(io.BytesIO(data)).read("mimetype")[:100]
        if declared.strip() == b"application/vnd.oasis.opendocument.text":
            return "application/vnd.oasis.opendocument.text"
    for entry, mime_type in ZIP_KINDS:
        if entry in names:
            return mime_type
    return None
