"""The ``folder`` source kind: a folder on the server's disk.

Its entries are the supported files under it (hidden entries skipped), with ``include`` and
``exclude`` globs and ``.gitignore``/``.citewellignore`` files applied as git does. A file's
version is its size and modification time, so a sync reads only files that changed. Only
folders under ``connector_allowed_paths`` may be read unless the local operator asks, and a
symlink whose target is outside the folder is refused, never followed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pathspec

from citewell.connectors.entries import Listing, SyncEntry, SyncRequest
from citewell.errors import Forbidden, InvalidInput
from citewell.loaders import supported_extensions

IGNORE_FILES = (".gitignore", ".citewellignore")


def allowed_roots(setting: str) -> tuple[Path, ...]:
    """``connector_allowed_paths`` as resolved folders."""
    return tuple(Path(p.strip()).expanduser().resolve() for p in setting.split(",") if p.strip())


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_local_path(target: str, allowed: Sequence[Path], trusted: bool) -> Path:
    """The folder ``target`` names, resolved, if it may be read (else InvalidInput for a
    bad path, Forbidden for one outside the allow-list; both say what to do)."""
    if not target or "\0" in target:
        raise InvalidInput("Name a folder on the server, e.g. /srv/docs.")
    path = Path(target).expanduser()
    if not path.is_absolute():
        raise InvalidInput(f"{target!r} is not an absolute path; name the folder from '/'.")
    resolved = path.resolve()
    if not trusted and not any(inside(resolved, root) for root in allowed):
        raise Forbidden(
            f"{target!r} is not under a folder that connectors may read; an admin lists such "
            "folders in the setting connector_allowed_paths."
        )
    if not resolved.is_dir():
        raise InvalidInput(f"{target!r} is not a folder on the server; check the path.")
    return resolved


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

    def __init__(self, allowed: Sequence[Path]) -> None:
        self.allowed = tuple(allowed)

    def check(self, request: SyncRequest) -> None:
        check_local_path(request.target, self.allowed, request.trusted)

    def listing(self, request: SyncRequest) -> Listing:
        root = check_local_path(request.target, self.allowed, request.trusted)
        walk = FolderWalk(
            root, request.options.get("include", ""), request.options.get("exclude", "")
        )
        entries = list(walk.entries())
        return Listing(iter(entries), "", tuple(walk.skipped))
