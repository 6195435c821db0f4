"""Searching without generating, as one caller may: in one file, or in knowledge bases
(ids or names) the caller may read. Access is checked by the caller's view (``Scoped``)
before the store is asked, and inside the store query."""

from __future__ import annotations

from collections.abc import Sequence

from citewell.engine.scoped import Scoped
from citewell.types import ChunkFilter, ScoredChunk, SearchMode


def requested_mode(hybrid: bool | None, mode: SearchMode | None = None) -> SearchMode | None:
    """A request's mode (Open WebUI's ``hybrid`` flag or ours); None leaves it to the KB's
    own default, else the settings' (config.resolve)."""
    if mode is not None or hybrid is None:
        return mode
    return SearchMode.HYBRID if hybrid else SearchMode.VECTOR


class SearchService:
    def __init__(self, view: Scoped) -> None:
        self.view = view

    def in_file(
        self, file: str, query: str, mode: SearchMode | None, k: int | None, threshold: float | None
    ) -> list[ScoredChunk]:
        """Search one file (by id) within the KBs the caller may read."""
        record = self.view.file(file)
        where = ChunkFilter(file_ids=(record.id,))
        return self.view.search(query, where, mode, k, threshold=threshold)

    def in_collections(
        self,
        names: Sequence[str],
        query: str,
        mode: SearchMode | None,
        k: int | None,
        threshold: float | None,
    ) -> list[ScoredChunk]:
        """Search knowledge bases (ids or names) the caller may read."""
        where = self.view.collection_filter(names)
        return self.view.search(query, where, mode, k, threshold=threshold)
