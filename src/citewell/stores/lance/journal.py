"""Which files each write to a LanceDB chunk table touched, by the table version it made:
what keeps a big table's in-memory copy current (memory/changes.py) without copying the
table again after every upload.

A line per write, ``[version, [file ids]]`` (``null`` for a write whose files are not
known, such as a delete by KB: the copy is then made again), appended beside the table.
Writers hold an exclusive lock on ``<name>.lock`` from their commit until the line is
written; a reader holds it shared while it opens the table's latest version and reads the
lines, so every version it sees has its line. Any process of the machine (the API
processes, a CLI import) writes through it.

Past ``MAX_BYTES`` a writer keeps the newer half of the lines and notes the oldest version
still described (the first line, ``{"from": version}``); a copy older than that is made
again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

MAX_BYTES = 16 << 20
T = TypeVar("T")


class ChangeJournal:
    def __init__(self, path: Path, max_bytes: int = MAX_BYTES) -> None:
        self.path, self.max_bytes = path, max_bytes
        self._lock_path = path.with_name(path.name + ".lock")

    def record(self, files: Iterable[str] | None, write: Callable[[], int]) -> int:
        """Runs ``write`` (which returns the table version it made) and notes what it
        touched; ``files`` None: unknown."""
        with self._locked(fcntl.LOCK_EX):
            version = write()
            listed = None if files is None else sorted(set(files))
            with self.path.open("a", encoding="utf-8") as log:
                log.write(json.dumps([version, listed]) + "\n")
                size = log.tell()
            if size > self.max_bytes:
                self._keep_newer_half()
            return version

    def read(self, open_latest: Callable[[], T]) -> tuple[T, list[tuple[int, list[str] | None]]]:
        """``open_latest()`` and every line, with no write between the two."""
        with self._locked(fcntl.LOCK_SH):
            opened = open_latest()
            return opened, list(self._lines())

    def files_after(
        self, version: int, lines: list[tuple[int, list[str] | None]]
    ) -> set[str] | None:
        """The files written in versions after ``version``; None: not known (a write of
        unknown files, or lines dropped that a copy this old would need)."""
        files: set[str] = set()
        for made, touched in lines:
            if made < 0:  # the header: versions up to ``-made`` are no longer described
                if version < -made:
                    return None
            elif made > version:
                if touched is None:
                    return None
                files.update(touched)
        return files

    def _lines(self) -> Iterator[tuple[int, list[str] | None]]:
        with contextlib.suppress(FileNotFoundError), self.path.open(encoding="utf-8") as log:
            for line in log:
                if line.strip():
                    yield _parse(line)

    def _keep_newer_half(self) -> None:
        lines = list(self._lines())
        dropped, kept = lines[: len(lines) // 2], lines[len(lines) // 2 :]
        oldest = max((abs(v) for v, _ in dropped), default=0)
        work = self.path.with_name(self.path.name + f".{os.getpid()}")
        with work.open("w", encoding="utf-8") as out:
            out.write(json.dumps({"from": oldest}) + "\n")
            out.writelines(json.dumps([v, f]) + "\n" for v, f in kept if v >= 0)
        os.replace(work, self.path)

    @contextlib.contextmanager
    def _locked(self, mode: int) -> Iterator[None]:
        with self._lock_path.open("a") as handle:
            fcntl.flock(handle, mode)  # released when the file closes
            yield


def _parse(line: str) -> tuple[int, list[str] | None]:
    """A line as (version, files); the header as (-oldest version, None)."""
    value = json.loads(line)
    if isinstance(value, dict):
        return -int(value["from"]), None
    return int(value[0]), value[1]
