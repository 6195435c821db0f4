"""`citewell files copy`: every stored file (originals, texts, page maps, staged and held
uploads) from one file store to another: the data dir's ``files/`` into a bucket before
switching ``file_store`` to s3, a bucket into a directory as a backup, a backup back.

A blob already in the target with the same size is not copied again, so an interrupted
copy simply runs again. Nothing is deleted from either side. Afterwards the target is
listed and must hold every blob of the source, with its size."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from citewell.blobs import BlobInfo, BlobStore
from citewell.blobs.registry import store_at
from citewell.catalog.storage import FOLDERS
from citewell.config import Settings
from citewell.errors import ConfigError

THREADS = 16  # object stores answer each request in tens of milliseconds: overlap them


@dataclass
class CopyReport:
    source: str
    target: str
    copied: int = 0
    unchanged: int = 0  # already in the target with the same size
    bytes_copied: int = 0
    missing: list[str] = field(default_factory=list)  # in the source, not in the target after

    @property
    def ok(self) -> bool:
        return not self.missing


def _name(folder: str, blob: BlobInfo) -> str:
    return f"{folder}/{blob.name}" if folder else blob.name


def _sizes(store: BlobStore) -> dict[str, int]:
    return {_name(f, b): b.size for f in FOLDERS for b in store.listing(f)}


class FileCopy:
    def __init__(self, source: BlobStore, target: BlobStore, say: Callable[[str], None]) -> None:
        if source.where == target.where:
            raise ConfigError(f"Both sides are {source.where}: name another --to or --from.")
        self.source, self.target, self.say = source, target, say

    def run(self) -> CopyReport:
        report = CopyReport(self.source.where, self.target.where)
        wanted, present = _sizes(self.source), _sizes(self.target)
        todo = [name for name, size in wanted.items() if present.get(name) != size]
        report.unchanged = len(wanted) - len(todo)
        self.say(f"{len(wanted)} stored blobs, {len(todo)} to copy to {self.target.where}")
        with ThreadPoolExecutor(THREADS) as pool:
            for done, size in enumerate(pool.map(self._copy, todo), 1):
                report.copied += size >= 0
                report.bytes_copied += max(size, 0)
                if done % 1000 == 0:
                    self.say(f"{done} of {len(todo)} copied")
        after = _sizes(self.target)
        report.missing = sorted(
            n for n, size in wanted.items() if after.get(n) != size and self.source.exists(n)
        )
        return report

    def _copy(self, name: str) -> int:
        """Bytes copied; -1 when the blob went from the source meanwhile (a job finished)."""
        data = self.source.read(name)
        if data is None:
            return -1
        self.target.write(name, data)
        return len(data)


def copy_files(
    settings: Settings, source: str, target: str, say: Callable[[str], None]
) -> CopyReport:
    """Copy between two locations (a directory or ``s3://bucket/prefix``; "" the file store
    the settings name)."""
    return FileCopy(store_at(source, settings), store_at(target, settings), say).run()


def settings_for(location: str) -> dict[str, str]:
    """The settings that make ``location`` the file store (for the message after a copy)."""
    parts = urlsplit(location)
    if parts.scheme != "s3":
        return {}
    found = {"CITEWELL_FILE_STORE": "s3", "CITEWELL_FILE_STORE_BUCKET": parts.netloc}
    if parts.path.strip("/"):
        found["CITEWELL_FILE_STORE_PREFIX"] = parts.path.strip("/")
    return found
