"""One copy of a big chunk table per machine, not per process: the copy's arrays kept in
files that every API process of the machine maps into memory (``table_copy_shared``).

Held by each process, a copy of a million chunks (3.3 GB) fit ``serve --workers 4`` only
for tables four times smaller, and past that searches read LanceDB: at a million chunks
44 ms instead of 24. Mapped from files, the operating system keeps one copy in its page
cache whichever processes read it, so the memory grows with the table, not with the
processes. The files are compact (decision 0034): int8 codes of the vectors (the float32
rows beside them, read a row at a time for exact scores), postings at 5 bytes each, the
ids, file ids and terms found through hashed lookups, and faiss's index, whose lists of
4-bit codes are mapped as well (ann_file.py). Searches touch about 1 GB a million chunks;
each process adds faiss's coarse centroids (a few MB) and nothing per row.

The first process to want the copy of a table version builds it (as before) and writes it
to ``<dir>/v<version>``, into a temporary directory renamed into place, so a directory
that exists is whole. The others wait on a lock file while it is built, then map it.
Versions older than the newest two are deleted, and all but the newest before another is
written; a process still mapping one keeps its pages until it moves on (Linux frees a
deleted file's pages when its last mapping goes).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from citewell.machine import process_running
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.ann import MemoryVectorIndex
from citewell.stores.memory.ann_file import read_index
from citewell.stores.memory.bm25 import KeywordPostings
from citewell.stores.memory.copy_writer import FORMAT, write_scan
from citewell.stores.memory.keys import FileRows, KeyIndex
from citewell.stores.memory.mapped import map_arrow, map_npy
from citewell.stores.memory.snapshot import (
    CopyPutOff,
    SnapshotSource,
    TableChanges,
    TableScan,
    TableSnapshot,
)
from citewell.stores.memory.vectors import QuantizedVectors

KEPT_VERSIONS = 2
# Disk a row of a copy takes when no copy is kept to measure (the first on the machine):
# 2.2 KB at 384 dimensions with SciFact's text, measured from one to ten million rows.
FIRST_COPY_ROW_BYTES = 2_400
DISK_MARGIN = 1.1  # room kept beyond the estimate (text lengths vary)
POSTING_ARRAYS = ("start", "rows", "impact", "tf", "lengths")


class SharedCopies:
    """A ``SnapshotSource`` whose big copies (those built with an ANN index) are shared
    through files under ``directory``; small tables' snapshots are each process's own."""

    def __init__(self, source: SnapshotSource, directory: Path) -> None:
        self.source, self.directory = source, directory

    def version(self) -> int:
        return self.source.version()

    def count_rows(self) -> int:
        return self.source.count_rows()

    def changes(self, since: int) -> TableChanges | None:
        return self.source.changes(since)  # each process's own: a few rows

    def saved(self, index: VectorIndexPolicy) -> TableSnapshot | None:
        """The newest copy in the directory, mapped (a process that starts after a restart
        or a crash serves from it, with the changes since, in seconds)."""
        versions = self._versions()
        return self._mapped(versions[0], index) if versions else None

    def kept(self) -> bool:
        """Whether a copy is saved that this release can map."""
        versions = self._versions()
        return bool(versions) and readable(self._path(versions[0]))

    def load(self, index: VectorIndexPolicy | None = None) -> TableSnapshot:
        if index is None:
            return self.source.load()
        self.directory.mkdir(parents=True, exist_ok=True)
        found = self._mapped(self.source.version(), index)
        if found is not None:
            return found
        with self._build_lock():
            found = self._mapped(self.source.version(), index)  # built while we waited?
            if found is not None:
                return found
            with self.source.scan() as scan:
                version = scan.version
                if not self._path(version).exists():
                    # The copy in use stays while the next is written; older ones go
                    # first, so the disk holds two copies at most, not three.
                    self._prune(keep=1)
                    self._check_disk(scan.rows)
                    write_copy(scan, self._path(version), index)
            release_freed_memory()  # what writing it took goes before the copy is mapped
            self._prune()
        mapped = self._mapped(version, index)
        assert mapped is not None  # written above, and never pruned while newest
        return mapped

    @contextlib.contextmanager
    def scan(self) -> Iterator[TableScan]:
        with self.source.scan() as scan:
            yield scan

    def _check_disk(self, rows: int) -> None:
        """Raise ``CopyPutOff`` when the disk lacks room for a copy of ``rows`` rows: the
        copy in use stays on disk while the next is written, and a write that runs out
        of room fails after minutes of work (ten million chunks: 21.5 GB, 15 minutes)."""
        free = shutil.disk_usage(self.directory).free
        needed = int(rows * self._row_bytes() * DISK_MARGIN)
        if free < needed:
            raise CopyPutOff(
                f"A copy of the table ({rows:,} rows) needs about {needed >> 20:,} MB of disk "
                f"under {self.directory}, and {free >> 20:,} MB are free: searches read the "
                "store until there is room (free some, or set table_copy_mb to 0)."
            )

    def _row_bytes(self) -> float:
        """Disk a row of the newest kept copy takes (``FIRST_COPY_ROW_BYTES`` if none)."""
        for version in self._versions():
            path = self._path(version)
            with contextlib.suppress(OSError, ValueError, KeyError):
                rows = int(json.loads((path / "meta.json").read_text())["documents"])
                if rows:
                    return sum(f.stat().st_size for f in path.iterdir()) / rows
        return FIRST_COPY_ROW_BYTES

    def _path(self, version: int) -> Path:
        return self.directory / f"v{version}"

    def _mapped(self, version: int, index: VectorIndexPolicy) -> TableSnapshot | None:
        path = self._path(version)
        if path.is_dir() and not readable(path):
            shutil.rmtree(path, ignore_errors=True)  # an older release's layout
        return read_copy(path, index) if path.is_dir() else None

    @contextlib.contextmanager
    def _build_lock(self) -> Iterator[None]:
        with (self.directory / "build.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
            yield

    def clear(self) -> None:
        """The table was dropped: its copies go (a process mapping one keeps its pages)."""
        shutil.rmtree(self.directory, ignore_errors=True)

    def _versions(self) -> list[int]:
        """The versions whose copies are kept, newest first."""
        return sorted(
            (int(p.name[1:]) for p in self.directory.glob("v*") if p.name[1:].isdigit()),
            reverse=True,
        )

    def _prune(self, keep: int = KEPT_VERSIONS) -> None:
        for version in self._versions()[keep:]:
            shutil.rmtree(self._path(version), ignore_errors=True)
        for stale in self.directory.glob(".building-*"):
            pid = stale.name.rsplit("-", 1)[-1]
            if pid.isdigit() and not process_running(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)


def write_copy(scan: TableScan, path: Path, index: VectorIndexPolicy) -> None:
    """The scanned table's copy as files in ``path`` (made whole, then renamed into place)."""
    work = path.parent / f".building-{path.name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        write_scan(scan, work, index)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    os.replace(work, path)


def _load_lookup(path: Path, name: str, keys: pa.Table, column: str) -> KeyIndex:
    strings = keys[column]  # chunked as written: joined, it would be each process's copy
    hashes = map_npy(path / f"{name}_hashes.npy")
    return KeyIndex(strings, hashes, map_npy(path / f"{name}_positions.npy"))


def read_copy(path: Path, index: VectorIndexPolicy) -> TableSnapshot:
    """The copy in ``path``, its arrays mapped (read-only) rather than read."""
    meta = json.loads((path / "meta.json").read_text())
    codes = map_npy(path / "codes.npy")
    scales = map_npy(path / "scales.npy")
    vectors = QuantizedVectors(codes, scales, path / "fine.npy")
    arrays = {n: map_npy(path / f"postings_{n}.npy") for n in POSTING_ARRAYS}
    terms = _load_lookup(path, "terms", map_arrow(path / "vocabulary.arrow"), "term")
    postings = KeywordPostings(
        terms, arrays["start"], arrays["rows"], arrays["impact"], meta["documents"],
        arrays["tf"], arrays["lengths"], meta["k1"], meta["b"],
    )  # fmt: skip
    rows = map_arrow(path / "rows.arrow")
    keys = _load_lookup(path, "ids", rows, "id")
    names = _load_lookup(path, "files", map_arrow(path / "files.arrow"), "file_id")
    files = FileRows(map_npy(path / "file_numbers.npy"), names)
    kb_rows = {kb: map_npy(path / f"kb_{n}.npy") for n, kb in enumerate(meta["kbs"])}
    ann = None
    if meta["ann"]:
        ann = MemoryVectorIndex(read_index(path), vectors, index)
    return TableSnapshot.of(meta["version"], vectors, kb_rows, rows, postings, ann, keys, files)


def readable(path: Path) -> bool:
    """A copy written in this release's layout (an older one is made again)."""
    with contextlib.suppress(OSError, ValueError):
        return bool(json.loads((path / "meta.json").read_text()).get("format") == FORMAT)
    return False


def release_freed_memory() -> None:
    """Collect, then hand the heap's free pages back to the system (glibc keeps them for
    reuse otherwise: the process that built a copy held its gigabytes after mapping it)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
