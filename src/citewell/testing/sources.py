"""The sources role's conformance suite. Subclass it and give ``source`` (the Source under
test) and ``request`` (a SourceRequest it serves, naming at least one document)."""

from __future__ import annotations

from citewell.ingest.sources import Source, SourceRequest
from citewell.sources import SourceItem


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
