"""The sources role's conformance suite. Subclass it and give ``source`` (the Source under
test) and ``request`` (a SourceRequest it serves, naming at least one document)."""

from __future__ import annotations

from typing import Any

from citewell.sources import SourceItem
from citewell.sources.registry import Source, SourceRequest


class SourceConformance:
    def test_items_name_documents_with_bytes(self, source: Source, request_: SourceRequest) -> None:
        items = list(source.items(request_))
        assert items and all(isinstance(i, SourceItem) for i in items)
        assert all(i.key and i.name for i in items)
        assert all(isinstance(i.read(), bytes) and i.read() for i in items)

    def test_keys_are_unique_and_stable(self, source: Source, request_: SourceRequest) -> None:
        """A key is the document's identity in its KB: the same request, the same keys (what
        lets a second run update documents instead of adding copies)."""
        first = [i.key for i in source.items(request_)]
        assert len(set(first)) == len(first)
        assert sorted(first) == sorted(i.key for i in source.items(request_))


class SyncableConformance:
    """For source kinds connectors keep in sync (``citewell.sources.connectors.Syncable``): fixtures
    ``syncable`` (the source) and ``sync_request`` (a SyncRequest naming a source with at
    least one document)."""

    def test_entries_have_unique_paths_and_bytes(self, syncable: Any, sync_request: Any) -> None:
        syncable.check(sync_request)
        entries = list(syncable.listing(sync_request).entries)
        paths = [e.path for e in entries]
        assert entries and len(set(paths)) == len(paths)
        assert all(p and not p.startswith("/") and ".." not in p.split("/") for p in paths)
        assert all(isinstance(e.read(), bytes) and e.version for e in entries)

    def test_versions_are_stable_while_nothing_changes(
        self, syncable: Any, sync_request: Any
    ) -> None:
        """What lets a sync skip reading unchanged entries."""
        first = {e.path: e.version for e in syncable.listing(sync_request).entries}
        assert first == {e.path: e.version for e in syncable.listing(sync_request).entries}
