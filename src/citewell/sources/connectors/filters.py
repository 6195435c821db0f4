"""Which paths of a remote source a connector takes: not hidden, within the include globs,
outside the exclude globs (gitignore syntax, comma-separated), and of a type Citewell reads.
Folder connectors apply the same rules with ignore files on top (folder.FolderWalk)."""

from __future__ import annotations

import pathspec

from citewell.loaders import supported_extensions


def spec(patterns: str) -> pathspec.GitIgnoreSpec | None:
    lines = [p.strip() for p in patterns.split(",") if p.strip()]
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


class PathFilter:
    def __init__(self, include: str = "", exclude: str = "") -> None:
        self.include, self.exclude = spec(include), spec(exclude)
        self.wanted = supported_extensions()

    def folder(self, relative: str) -> bool:
        """Whether to look inside this folder ('a/b', no trailing '/')."""
        if any(part.startswith(".") for part in relative.split("/")):
            return False
        return self.exclude is None or not self.exclude.match_file(relative + "/")

    def file(self, relative: str) -> bool:
        name = relative.rsplit("/", 1)[-1]
        if name.startswith(".") or "." not in name:
            return False
        if self.exclude is not None and self.exclude.match_file(relative):
            return False
        if self.include is not None and not self.include.match_file(relative):
            return False
        return "." + name.rsplit(".", 1)[-1].lower() in self.wanted

    def path(self, relative: str) -> bool:
        """A file at any depth: each folder on its way taken, and the file itself."""
        parts = relative.split("/")
        folders = ("/".join(parts[: i + 1]) for i in range(len(parts) - 1))
        return all(self.folder(f) for f in folders) and self.file(relative)
