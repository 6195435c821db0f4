"""Where LanceDB's vector index builds put their scratch files, and their removal.

Lance 9 shuffles the rows of an IVF build (a training, or a delta of new rows) into files
under the OS temp dir and never removes them (lance-format/lance#8992): each build left a
directory behind, 2.4 GB for one training at ten million chunks, 12 GB in /tmp after one
such build and a day of tests. Where /tmp is a tmpfs (Debian 13's default) that is memory.

Lance asks for TMPDIR when it makes that directory, so each vector build runs with TMPDIR
pointed at a folder of this process under the data dir (``<lancedb>/.scratch/<pid>``), and
the shuffle directories left there are removed once the build returns. Folders of processes
no longer running (a server killed mid-build) are removed when a store opens.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from citewell.machine import process_running

log = logging.getLogger(__name__)

SCRATCH_FOLDER = ".scratch"  # in the LanceDB directory: not a table (no .lance suffix)
SHUFFLE_PREFIX = "shuffle_"  # Lance's shuffle files: shuffle_data.lance, shuffle_offsets.spill


class _Builds:
    """The vector builds under way in this process: TMPDIR is one per process, so it moves
    with the first and is set back, and the folder emptied, after the last (a training of
    one table may run for minutes beside another table's delta)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.before: str | None = None
        self.folder: Path | None = None  # where TMPDIR points while builds run


_BUILDS = _Builds()


class BuildScratch:
    """The scratch folders of one LanceDB directory's vector builds."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def folder(self) -> Path:
        return self.root / str(os.getpid())  # read per build: a forked child has its own

    @contextmanager
    def vector_build(self) -> Iterator[None]:
        """Run a vector index build with its scratch files in this process's folder, and
        remove the shuffle directories left there once no build runs."""
        default = tempfile.gettempdir()  # Python's own temp dir is fixed before TMPDIR moves
        with _BUILDS.lock:
            if not _BUILDS.running:  # another table's build under way keeps its folder
                _BUILDS.folder = self.folder
                _BUILDS.folder.mkdir(parents=True, exist_ok=True)
                _BUILDS.before = os.environ.get("TMPDIR")
                os.environ["TMPDIR"] = str(_BUILDS.folder)
            _BUILDS.running += 1
        try:
            yield
        finally:
            with _BUILDS.lock:
                _BUILDS.running -= 1
                if not _BUILDS.running:
                    # Set back, not unset: glibc's unsetenv moves the environment's entries
                    # under threads that may be reading it.
                    os.environ["TMPDIR"] = _BUILDS.before or default
                    if _BUILDS.folder is not None:
                        self.remove_shuffles(_BUILDS.folder)

    @staticmethod
    def remove_shuffles(folder: Path) -> int:
        """Remove the directories in ``folder`` that hold Lance's shuffle files, and no other
        (a thread's or child's temp files made while TMPDIR pointed here stay). Returns how
        many."""
        removed = 0
        for entry in folder.iterdir() if folder.is_dir() else ():
            if entry.is_dir() and _holds_shuffles(entry):
                shutil.rmtree(entry, ignore_errors=True)
                removed += 1
        return removed

    def remove_dead(self) -> int:
        """Remove the folders of processes no longer running; returns how many."""
        removed = 0
        for entry in self.root.iterdir() if self.root.is_dir() else ():
            if entry.name.isdigit() and not process_running(int(entry.name)):
                shutil.rmtree(entry, ignore_errors=True)
                removed += 1
        if removed:
            log.info("Removed %d scratch folders of stopped processes in %s", removed, self.root)
        return removed


def _holds_shuffles(directory: Path) -> bool:
    names = [entry.name for entry in directory.iterdir()]
    return bool(names) and all(name.startswith(SHUFFLE_PREFIX) for name in names)
