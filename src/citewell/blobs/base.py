"""The file store role: a flat namespace of blobs, one level of folders (``staging/``,
``uploads/``). Every backend writes whole blobs atomically (a reader sees the old bytes or
the new, never part), reads a missing blob as None and removes one that is gone quietly.
A backend may also offer ``write_new(name, data)``, for a blob no record names yet, that
need not be atomic (``DirectoryBlobs``'s skips the temporary file); others get ``write``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# A name is ``file`` or ``folder/file`` of letters, digits, dots, dashes and underscores:
# nothing that could climb out of the store's root or collide with its temporary files.
_NAME = re.compile(r"^(?:[A-Za-z0-9_-]+/)?[A-Za-z0-9_-][A-Za-z0-9._-]*$")


def check_name(name: str) -> str:
    if not _NAME.match(name) or name.endswith(".tmp") or ".." in name:
        raise ValueError(f"not a blob name: {name!r}")
    return name


@dataclass(frozen=True)
class BlobInfo:
    name: str  # within its folder
    size: int
    modified: float  # Unix time of its last write


@runtime_checkable
class BlobStore(Protocol):
    """Blobs by name. ``where`` says where they are, for messages and ``citewell check``."""

    @property
    def where(self) -> str: ...

    def write(self, name: str, data: bytes) -> None:
        """Store ``data`` under ``name``, replacing what was there, atomically."""

    def read(self, name: str) -> bytes | None:
        """The blob's bytes, or None when there is none."""

    def exists(self, name: str) -> bool: ...

    def remove(self, name: str) -> None:
        """Gone afterwards; a missing blob is no error."""

    def listing(self, folder: str = "") -> Iterator[BlobInfo]:
        """The blobs directly in ``folder`` ("" the top level), in no particular order."""
