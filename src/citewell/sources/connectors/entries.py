"""What a syncable source lists: entries with versions, read only when they changed."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class SyncEntry:
    """One document of a source: its path within the source ('/'-separated, no leading
    '/'), a version that changes whenever its bytes may have (size and mtime, a blob id, an
    ETag), how to read its bytes, and the URL it has on the web, if any (a website's page:
    citations link there)."""

    path: str
    version: str
    read: Callable[[], bytes]
    url: str = ""


@dataclass(frozen=True)
class Listing:
    """A source's entries now; ``cursor``: where the source stands (a git commit), kept
    with the connector; ``skipped``: entries refused, with the reason (a symlink out of the
    folder), reported as failed items."""

    entries: Iterator[SyncEntry]
    cursor: str = ""
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reader:
    """Whom a connector reads for (its owner): the folders granted in
    ``connector_allowed_paths`` name users and groups."""

    name: str
    groups: frozenset[str] = frozenset()
    admin: bool = False


@dataclass(frozen=True)
class SyncRequest:
    """What to list: ``target`` (a folder, a repository URL), kind-specific ``options``
    (branch, sub-path, include and exclude globs), decrypted ``credentials``, the cursor the
    last sync ended at, ``trusted``: the local operator, whom no allow-list limits, and
    ``reader``: the owner it reads for (None: nobody, so no granted folder)."""

    target: str
    options: Mapping[str, str] = field(default_factory=dict)
    credentials: Mapping[str, str] = field(default_factory=dict)
    cursor: str = ""
    trusted: bool = False
    reader: Reader | None = None


@runtime_checkable
class Syncable(Protocol):
    """A source kind (of the ``sources`` registry) that connectors can keep in sync."""

    def check(self, request: SyncRequest) -> None:
        """Raise InvalidInput or Forbidden when the request may not be synced (a folder
        outside the allow-list, a refused URL); called when a connector is made and before
        every sync."""
        ...

    def listing(self, request: SyncRequest) -> Listing: ...
