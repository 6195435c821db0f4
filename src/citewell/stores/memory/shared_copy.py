"""One copy of a big chunk table per machine, not per process: the copy's arrays kept in
files that every API process of the machine maps into memory (``table_copy_shared``).

A copy of a table past the ANN threshold takes about 3.3 GB a million chunks. Held by each
process, ``serve --workers 4`` could afford it only for tables four times smaller (each
process got a quarter of ``table_copy_mb``), and past that searches read LanceDB: at a
million chunks 44 ms instead of 24. Mapped from files, the operating system keeps one copy
in its page cache whichever processes read it, so the memory grows with the table, not
with the processes.

The first process to want the copy of a table version builds it (as before) and writes it
to ``<dir>/v<version>``: the vectors, BM25 postings, KB rows and row columns as NumPy and
Arrow files, the faiss index beside them; it writes into a temporary directory renamed
into place, so a directory that exists is whole. The others wait on a lock file while it
is built, then map it. What each process still holds on its own: the chunk ids and file
ids as Python objects, the id → row and term → number dicts, and faiss's 4-bit codes
(about 0.6 GB a million chunks together, measured; the process that made the copy keeps
more). Versions older than the newest two are deleted; a process still mapping one keeps
its pages until it moves on (Linux frees a deleted file's pages when its last mapping
goes).
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
from typing import Any

import numpy as np
import pyarrow as pa
from pyarrow import ipc

from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.ann import MemoryVectorIndex, _faiss
from citewell.stores.memory.bm25 import KeywordPostings
from citewell.stores.memory.snapshot import SnapshotSource, TableChanges, TableSnapshot

KEPT_VERSIONS = 2
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
            built = self.source.load(index)
            version = built.version
            if not self._path(version).exists():
                write_copy(built, self._path(version))
            del built
            release_freed_memory()  # the built copy's memory goes before the mapped one
            self._prune()
        mapped = self._mapped(version, index)
        assert mapped is not None  # written above, and never pruned while newest
        return mapped

    def _path(self, version: int) -> Path:
        return self.directory / f"v{version}"

    def _mapped(self, version: int, index: VectorIndexPolicy) -> TableSnapshot | None:
        path = self._path(version)
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

    def _prune(self) -> None:
        for version in self._versions()[KEPT_VERSIONS:]:
            shutil.rmtree(self._path(version), ignore_errors=True)
        for stale in self.directory.glob(".building-*"):
            pid = stale.name.rsplit("-", 1)[-1]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)


def write_copy(snapshot: TableSnapshot, path: Path) -> None:
    """The snapshot's arrays as files in ``path`` (made whole, then renamed into place)."""
    work = path.parent / f".building-{path.name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    np.save(work / "vectors.npy", snapshot.vectors)
    postings = snapshot.postings
    for name in POSTING_ARRAYS:
        np.save(work / f"postings_{name}.npy", getattr(postings, name))
    vocabulary = sorted(postings.vocabulary, key=postings.vocabulary.__getitem__)
    _write_arrow(work / "vocabulary.arrow", pa.table({"term": pa.array(vocabulary)}))
    _write_arrow(work / "rows.arrow", snapshot.rows)
    kbs = list(snapshot.kb_rows)
    for n, kb in enumerate(kbs):
        np.save(work / f"kb_{n}.npy", snapshot.kb_rows[kb])
    ann = snapshot.ann
    if ann is not None and ann.index is not None:
        _faiss().write_index(ann.index, str(work / "ann.faiss"))
    meta = {
        "version": snapshot.version, "kbs": kbs, "documents": postings.documents,
        "k1": postings.k1, "b": postings.b, "ann": ann is not None,
    }  # fmt: skip
    (work / "meta.json").write_text(json.dumps(meta))
    os.replace(work, path)


def read_copy(path: Path, index: VectorIndexPolicy) -> TableSnapshot:
    """The copy in ``path``, its arrays mapped (read-only) rather than read."""
    meta = json.loads((path / "meta.json").read_text())
    vectors = np.load(path / "vectors.npy", mmap_mode="r")
    arrays = {n: np.load(path / f"postings_{n}.npy", mmap_mode="r") for n in POSTING_ARRAYS}
    terms = _read_arrow(path / "vocabulary.arrow")["term"].to_pylist()
    postings = KeywordPostings(
        {term: n for n, term in enumerate(terms)}, arrays["start"], arrays["rows"],
        arrays["impact"], meta["documents"], arrays["tf"], arrays["lengths"], meta["k1"],
        meta["b"],
    )  # fmt: skip
    rows = _read_arrow(path / "rows.arrow")
    kb_rows = {kb: np.load(path / f"kb_{n}.npy", mmap_mode="r") for n, kb in enumerate(meta["kbs"])}
    ann = None
    if meta["ann"]:
        faiss_file = path / "ann.faiss"
        found = _faiss().read_index(str(faiss_file)) if faiss_file.exists() else None
        ann = MemoryVectorIndex(found, vectors, index)
    return TableSnapshot.of(meta["version"], vectors, kb_rows, rows, postings, ann)


def _write_arrow(path: Path, table: pa.Table) -> None:
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())


def _read_arrow(path: Path) -> pa.Table:
    """Zero-copy: the table's buffers point into the mapped file."""
    source: Any = pa.memory_map(str(path), "r")
    return ipc.open_file(source).read_all()


def release_freed_memory() -> None:
    """Collect, then hand the heap's free pages back to the system (glibc keeps them for
    reuse otherwise: the process that built a copy held its gigabytes after mapping it)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
