"""The ``folder`` source kind: a folder on the server's disk.

Its entries are the supported files under it (hidden entries skipped), with ``include`` and
``exclude`` globs and ``.gitignore``/``.citewellignore`` files applied as git does. A file's
version is its size and modification time, so a sync reads only files that changed. Only
folders granted to the connector's owner may be read unless the local operator asks
(``folder_grants``), and a symlink whose target is outside the folder is refused, never
followed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pathspec

from citewell.errors import InvalidInput
from citewell.loaders import supported_extensions
from citewell.sources.connectors.entries import Listing, SyncEntry, SyncRequest
from citewell.sources.connectors.folder_grants import FolderGrants, inside

IGNORE_FILES = (".gitignore", ".citewellignore")


def _spec(patterns: str) -> pathspec.GitIgnoreSpec | None:
    lines = [p.strip() for p in patterns.split(",") if p.strip()]
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


class FolderWalk:
    """The entries of one folder, as the request's globs and the ignore files say."""

    def __init__(self, root: Path, include: str = "", exclude: str = "") -> None:
        self.root = root
        self.include, self.exclude = _spec(include), _spec(exclude)
        self.ignores: dict[Path, pathspec.GitIgnoreSpec] = {}
        self.skipped: list[str] = []
        self.wanted = supported_extensions()

    def entries(self) -> Iterator[SyncEntry]:
        for directory, dirs, files in os.walk(self.root):
            here = Path(directory)
            self._read_ignores(here)
            dirs[:] = sorted(d for d in dirs if self._keep(here / d, folder=True))
            for name in sorted(files):
                path = here / name
                if self._keep(path, folder=False):
                    entry = self._entry(path)
                    if entry is not None:
                        yield entry

    def _read_ignores(self, folder: Path) -> None:
        lines: list[str] = []
        for name in IGNORE_FILES:
            candidate = folder / name
            if candidate.is_file() and not candidate.is_symlink():
                lines += candidate.read_text(errors="replace").splitlines()
        if lines:
            self.ignores[folder] = pathspec.GitIgnoreSpec.from_lines(lines)

    def _keep(self, path: Path, folder: bool) -> bool:
        if path.name.startswith("."):
            return False
        relative = path.relative_to(self.root).as_posix() + ("/" if folder else "")
        for base, spec in self.ignores.items():
            if inside(path, base) and spec.match_file(
                path.relative_to(base).as_posix() + ("/" if folder else "")
            ):
                return False
        if self.exclude is not None and self.exclude.match_file(relative):
            return False
        if folder:
            return not path.is_symlink()  # links to folders are not followed
        if self.include is not None and not self.include.match_file(relative):
            return False
        return path.suffix.lower() in self.wanted

    def _entry(self, path: Path) -> SyncEntry | None:
        relative = path.relative_to(self.root).as_posix()
        resolved = path.resolve()
        if not inside(resolved, self.root):
            self.skipped.append(f"{relative}: a symlink to outside the folder; not followed")
            return None
        try:
            stat = resolved.stat()
        except OSError as exc:
            self.skipped.append(f"{relative}: {exc.strerror or exc}")
            return None
        return SyncEntry(relative, f"{stat.st_size}:{stat.st_mtime_ns}", self._reader(path))

    def _reader(self, path: Path) -> Callable[[], bytes]:
        root = self.root

        def read() -> bytes:
            resolved = path.resolve()  # again: the link may have changed since the listing
            if not inside(resolved, root):
                raise InvalidInput(f"{path.name}: now a symlink to outside the folder")
            return resolved.read_bytes()

        return read


class FolderSource:
    """A folder on the server's disk, for ``citewell ingest --source folder`` and connectors."""

    def __init__(self, grants: FolderGrants) -> None:
        self.grants = grants

    def check(self, request: SyncRequest) -> None:
        self.grants.check(request.target, request)

    def listing(self, request: SyncRequest) -> Listing:
        root = self.grants.check(request.target, request)
        walk = FolderWalk(
            root, request.options.get("include", ""), request.options.get("exclude", "")
        )
        entries = list(walk.entries())
        return Listing(iter(entries), "", tuple(walk.skipped))
