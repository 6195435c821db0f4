"""The splitter role's conformance suite. Subclass it and give a ``splitter`` fixture whose
chunks hold at most ``chunk_size`` (a fixture, default 200) as ``size_of`` measures (a fixture,
default ``len``: characters)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from citewell.splitters.base import Splitter
from citewell.types import Document

TEXT = (
    "# Leave\n\nParental leave lasts sixteen weeks at full pay. Sick leave needs a doctor's "
    "note after three days. Unused holidays carry over until March.\n\n"
    "# Work\n\nRemote work is allowed two days a week. The office opens at eight. "
    "Desks are booked in the app; lockers are free. " * 3
)


HANDBOOK = Document(TEXT, "handbook.md", "text/markdown", title="Handbook")


class SplitterConformance:
    @pytest.fixture
    def chunk_size(self) -> int:
        return 200

    def test_chunks_are_spans_of_the_text_in_order(self, splitter: Splitter) -> None:
        chunks = splitter.split(HANDBOOK)
        assert chunks and all(c.text == TEXT[c.start : c.end] and c.text for c in chunks)
        assert [c.start for c in chunks] == sorted(c.start for c in chunks)

    def test_every_word_is_in_some_chunk(self, splitter: Splitter) -> None:
        chunks = splitter.split(HANDBOOK)
        covered = " ".join(c.text for c in chunks)
        assert all(word in covered for word in TEXT.split())

    @pytest.fixture
    def size_of(self) -> Callable[[str], int]:
        return len

    def test_chunks_respect_the_size(
        self, splitter: Splitter, chunk_size: int, size_of: Callable[[str], int]
    ) -> None:
        chunks = splitter.split(HANDBOOK)
        assert all(size_of(c.text) <= chunk_size for c in chunks)

    def test_empty_text_gives_no_chunks(self, splitter: Splitter) -> None:
        assert splitter.split(Document("", "empty.md", "text/markdown")) == []
