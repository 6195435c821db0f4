"""Keeping a KB in step with a source's listing (``connectors``).

The listing is compared with the paths the connector holds in the KB: an entry whose
version is unchanged is not read; a new or changed one goes through the ingestor, whose
content hashes make a renamed, moved or copied file a link (nothing parsed or embedded);
paths the listing no longer has leave the KB last, after every add, so a rename keeps its
embeddings. A failed item keeps its old version (or stays absent) and is tried again at the
next sync; the run goes on. Running a sync again after a crash finishes it: the comparison
starts from what the catalog holds, so nothing is added twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from citewell.catalog.synced_paths import SyncedPath
from citewell.errors import InvalidInput
from citewell.ingest.ingestor import Ingestor
from citewell.ingest.types import ItemEvent
from citewell.sources import SourceItem
from citewell.sources.connectors import Listing, SyncEntry

SYNC_BATCH = 256  # changed entries handed to the ingestor at once


@dataclass
class SyncTally:
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    chunks_embedded: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SyncScope:
    """Where and as what the entries land: the KB, the connector, the folder of the KB they
    go under ('' or ending in '/'), the source kind links show, the uploader."""

    kb_id: str
    connector_id: str
    folder: str = ""
    source: str = "folder"
    added_by: str = ""
    allow_empty: bool = False


class Syncer:
    def __init__(self, ingestor: Ingestor) -> None:
        self.ingestor = ingestor
        self.catalog = ingestor.catalog

    def sync(
        self,
        scope: SyncScope,
        listing: Listing,
        progress: Callable[[SyncTally], None] | None = None,
    ) -> SyncTally:
        tally = SyncTally(failed=len(listing.skipped), errors=list(listing.skipped))
        held = self.catalog.synced.of(scope.kb_id, scope.connector_id)
        seen: set[str] = set()
        batch: list[tuple[SyncEntry, str]] = []
        for entry in listing.entries:  # an error here stops the run before any delete
            path = scope.folder + entry.path
            seen.add(path)
            known = held.get(path)
            if known is not None and known.version == entry.version:
                tally.unchanged += 1
                continue
            batch.append((entry, path))
            if len(batch) >= SYNC_BATCH:
                self._ingest(scope, batch, held, tally)
                batch = []
                if progress is not None:
                    progress(tally)
        self._ingest(scope, batch, held, tally)
        gone = [held[p] for p in held if p not in seen]
        if gone and not seen and not scope.allow_empty:
            raise InvalidInput(
                f"The source lists no documents now, but {len(gone)} were synced from it; "
                "nothing was deleted (an unmounted share looks like this). If it really is "
                "empty, sync with allow_empty."
            )
        self._delete(scope.kb_id, gone, tally)
        return tally

    def _ingest(
        self,
        scope: SyncScope,
        batch: list[tuple[SyncEntry, str]],
        held: dict[str, SyncedPath],
        tally: SyncTally,
    ) -> None:
        if not batch:
            return
        items = [self._item(scope, entry, path) for entry, path in batch]
        done: dict[str, str] = {}

        def observe(event: ItemEvent) -> None:
            if event.state == "indexed":
                done[event.key] = event.file_id

        report = self.ingestor.ingest(items, scope.kb_id, observer=observe, optimize=False)
        tally.chunks_embedded += report.chunks_embedded
        tally.errors += report.errors
        tally.failed += report.files_failed
        for _, path in batch:
            if path not in done:
                continue
            known = held.get(path)
            if known is None:
                tally.added += 1
            elif known.file_id == done[path]:
                tally.unchanged += 1  # touched, same bytes
            else:
                tally.updated += 1
        versions = {path: entry.version for entry, path in batch if path in done}
        self.catalog.synced.record(scope.kb_id, scope.connector_id, versions)

    @staticmethod
    def _item(scope: SyncScope, entry: SyncEntry, path: str) -> SourceItem:
        name = path.rsplit("/", 1)[-1]
        return SourceItem(
            path, name, entry.read, source=scope.source, url=entry.url, added_by=scope.added_by
        )

    def _delete(self, kb_id: str, gone: list[SyncedPath], tally: SyncTally) -> None:
        with self.ingestor.lock:
            for path in gone:
                self.catalog.synced.forget(kb_id, path.path)
                if not self.catalog.paths_in_kb(kb_id, path.file_id):
                    self.ingestor.remove_from_kb(kb_id, path.file_id)
                tally.deleted += 1
