"""A knowledge base's own settings: retrieval defaults (what a search or an answer over that
KB uses when the request does not say; unset fields take the server's) and its own chunking
(server settings such as text_splitter and chunk_size that its files are split with)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from citewell.config.resolve import Choice
from citewell.types import SearchMode


@dataclass(frozen=True)
class KnowledgeSettings:
    mode: SearchMode | None = None  # hybrid, vector or bm25
    top_k: int | None = None
    candidate_k: int | None = None
    hybrid_bm25_weight: float | None = None
    relevance_threshold: float | None = None
    rerank: bool | None = None  # False: skip the configured reranker for this KB
    full_context: bool | None = None  # whole documents while they fit the budget
    # Its own chunking, as sorted (setting, value) pairs; () keeps the server's.
    chunking: tuple[tuple[str, Any], ...] = ()

    @property
    def set(self) -> dict[str, Any]:
        """The fields this KB sets, as JSON values."""
        out = {k: v for k, v in asdict(self).items() if v is not None and k != "chunking"}
        if self.mode is not None:
            out["mode"] = self.mode.value
        if self.chunking:
            out["chunking"] = self.chunking_map
        return out

    @property
    def chunking_map(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.chunking}

    def choice(self) -> Choice:
        """What this KB sets of a search's retrieval (config.resolve)."""
        return Choice(
            top_k=self.top_k or None,
            mode=self.mode,
            relevance_threshold=self.relevance_threshold,
            full_context=self.full_context,
        )

    @property
    def retrieval(self) -> KnowledgeSettings:
        """Only the retrieval defaults (what searches over several KBs must share)."""
        return replace(self, chunking=())

    def to_json(self) -> str:
        return json.dumps(self.set, sort_keys=True)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> KnowledgeSettings:
        known = {f.name for f in fields(cls)}
        kept = {k: v for k, v in values.items() if k in known and v is not None}
        if "mode" in kept:
            kept["mode"] = SearchMode(kept["mode"])
        if "chunking" in kept:
            kept["chunking"] = frozen_chunking(kept["chunking"])
        return cls(**kept)

    @classmethod
    def from_json(cls, text: str | None) -> KnowledgeSettings:
        return cls.from_mapping(json.loads(text or "{}"))

    def updated(self, changes: Mapping[str, Any]) -> KnowledgeSettings:
        """These settings with ``changes`` applied: a value sets a field, None clears it."""
        mode = changes.get("mode", self.mode)
        values = {**asdict(self), **changes, "mode": SearchMode(mode) if mode else None}
        values["chunking"] = frozen_chunking(values["chunking"] or {})
        return replace(self, **values)


def frozen_chunking(
    values: Mapping[str, Any] | Iterable[tuple[str, Any]],
) -> tuple[tuple[str, Any], ...]:
    """Chunking settings as sorted pairs with lists as tuples (hashable, comparable)."""
    pairs = values.items() if isinstance(values, Mapping) else values
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in pairs))


NO_SETTINGS = KnowledgeSettings()


def common(settings: Iterable[KnowledgeSettings]) -> KnowledgeSettings:
    """The settings all of these KBs share, or none when they differ: a search over KBs
    with different defaults uses the server's."""
    distinct = {s.retrieval for s in settings}
    return distinct.pop() if len(distinct) == 1 else NO_SETTINGS
