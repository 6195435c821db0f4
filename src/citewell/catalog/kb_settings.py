"""A knowledge base's own retrieval defaults: what a search or an answer over that KB uses
when the request does not say. Unset fields (None) take the server's settings."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

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

    @property
    def set(self) -> dict[str, Any]:
        """The fields this KB sets, as JSON values."""
        out = {k: v for k, v in asdict(self).items() if v is not None}
        if self.mode is not None:
            out["mode"] = self.mode.value
        return out

    def to_json(self) -> str:
        return json.dumps(self.set, sort_keys=True)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> KnowledgeSettings:
        known = {f.name for f in fields(cls)}
        kept = {k: v for k, v in values.items() if k in known and v is not None}
        if "mode" in kept:
            kept["mode"] = SearchMode(kept["mode"])
        return cls(**kept)

    @classmethod
    def from_json(cls, text: str | None) -> KnowledgeSettings:
        return cls.from_mapping(json.loads(text or "{}"))

    def updated(self, changes: Mapping[str, Any]) -> KnowledgeSettings:
        """These settings with ``changes`` applied: a value sets a field, None clears it."""
        mode = changes.get("mode", self.mode)
        values = {**asdict(self), **changes, "mode": SearchMode(mode) if mode else None}
        return replace(self, **values)


NO_SETTINGS = KnowledgeSettings()


def common(settings: Iterable[KnowledgeSettings]) -> KnowledgeSettings:
    """The settings all of these KBs share, or none when they differ: a search over KBs
    with different defaults uses the server's."""
    distinct = set(settings)
    return distinct.pop() if len(distinct) == 1 else NO_SETTINGS
