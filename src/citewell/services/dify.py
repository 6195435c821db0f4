"""Dify's external knowledge API as a service: one KB searched for one query, with Dify's
metadata conditions. Conditions on what a file's link says (its name, path, folder, id, URL,
when it was added) narrow the search to those files inside the store query, so ``top_k``
results still come back; conditions on a passage (its page) are checked on the candidates."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from citewell.catalog.folders import folder_of
from citewell.catalog.link_rows import FileLink
from citewell.engine.as_linked import shown_name
from citewell.engine.scoped import Scoped
from citewell.errors import InvalidInput
from citewell.types import ChunkFilter, ScoredChunk

FILE_FIELDS = {"file_name", "path", "folder", "file_id", "url", "added_at", "knowledge_id"}
PASSAGE_FIELDS = {"page"}
WIDER = 4  # candidates per wanted result when passages are filtered after the search
ALIASES = {"≠": "!=", "≥": ">=", "≤": "<=", "null": "empty", "not null": "not empty"}


@dataclass(frozen=True)
class Condition:
    names: tuple[str, ...]  # Dify sends one name, or (older releases) a list: any may match
    operator: str
    value: Any = None

    def holds(self, metadata: dict[str, Any]) -> bool:
        compare = _OPERATORS[ALIASES.get(self.operator, self.operator)]
        return any(compare(metadata.get(name), self.value) for name in self.names)


@dataclass(frozen=True)
class DifyRecord:
    content: str
    score: float
    title: str
    metadata: dict[str, Any]


def condition(names: str | Sequence[str], operator: str, value: Any) -> Condition:
    """A condition as Dify sends it; an operator Dify does not define is refused."""
    if ALIASES.get(operator, operator) not in _OPERATORS:
        known = ", ".join(sorted(_OPERATORS))
        raise InvalidInput(f"comparison_operator {operator!r} is not one of: {known}.")
    listed = (names,) if isinstance(names, str) else tuple(names)
    if not listed:
        raise InvalidInput("A metadata condition needs the name of a metadata field.")
    return Condition(listed, operator, value)


class DifyRetrieval:
    def __init__(self, view: Scoped) -> None:
        self.view = view

    def retrieve(
        self,
        knowledge_id: str,
        query: str,
        top_k: int,
        threshold: float,
        conditions: Sequence[Condition] = (),
        any_of: bool = False,
    ) -> list[DifyRecord]:
        """``knowledge_id`` is a KB id or name this caller may read (else not found)."""
        where = self.view.collection_filter([knowledge_id])
        files = self._files(where.kb_ids or ()) if conditions else {}
        on_files = [c for c in conditions if set(c.names) <= FILE_FIELDS]
        narrowing = on_files if not any_of or len(on_files) == len(conditions) else []
        join = any if any_of else all
        if narrowing:
            chosen = tuple(
                file_id
                for file_id, metadata in files.items()
                if join(c.holds(metadata) for c in narrowing)
            )
            if not chosen:
                return []
            where = ChunkFilter(kb_ids=where.kb_ids, file_ids=chosen)
        rest = [c for c in conditions if c not in narrowing]
        k = top_k * WIDER if rest else top_k
        found = self.view.search(query, where, None, k, threshold=threshold or None)
        records = [_record(hit, files.get(hit.chunk.file_id, {})) for hit in found]
        if rest:
            records = [r for r in records if join(c.holds(r.metadata) for c in rest)]
        return records[:top_k]

    def _files(self, kb_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """File id → what its link in the KB says, as Dify's conditions name it."""
        catalog = self.view.app.catalog
        links = catalog.links(kb_ids=kb_ids)
        unnamed = {link.file_id for link in links if not shown_name(link)}
        own = {r.id: r.name for r in catalog.files_by_id(unnamed)} if unnamed else {}
        return {link.file_id: _file_metadata(link, own.get(link.file_id, "")) for link in links}


def _file_metadata(link: FileLink, own_name: str) -> dict[str, Any]:
    """Never the server path a file was read from: the name shown in the KB, its folder."""
    shown = shown_name(link) or own_name
    return {
        "file_id": link.file_id,
        "file_name": shown.rsplit("/", 1)[-1],
        "path": shown,
        "folder": folder_of(link.path),
        "url": link.url,
        "added_at": datetime.fromtimestamp(link.added_at, UTC).isoformat(),
        "knowledge_id": link.kb_id,
    }


def _record(hit: ScoredChunk, known: dict[str, Any]) -> DifyRecord:
    chunk = hit.chunk
    shown = chunk.file_name  # after its folder, as the link in this KB names it
    metadata = {
        "file_id": chunk.file_id,
        "file_name": shown.rsplit("/", 1)[-1],
        "path": hit.url or shown,
        "folder": shown.rsplit("/", 1)[0] if "/" in shown and not hit.url else "",
        "url": hit.url,
        "knowledge_id": hit.kb_id or "",
        **{k: v for k, v in known.items() if k == "added_at"},
        "description": " > ".join(chunk.headings),
        "page": chunk.page,
        "start": chunk.start,
        "end": chunk.end,
        "chunk_id": chunk.id,
    }
    score = hit.score if math.isfinite(hit.score) else 0.0
    return DifyRecord(chunk.text, round(score, 6), shown, metadata)


def _number(found: Any) -> float | None:
    try:
        return float(found)
    except (TypeError, ValueError):
        return None


def _moment(found: Any) -> float | None:
    """A date as an ISO string or Unix seconds."""
    number = _number(found)
    if number is not None:
        return number
    try:
        parsed = datetime.fromisoformat(str(found))
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _numeric(test: Callable[[float, float], bool]) -> Callable[[Any, Any], bool]:
    def compare(found: Any, value: Any) -> bool:
        a, b = _number(found), _number(value)
        return a is not None and b is not None and test(a, b)

    return compare


def _dated(test: Callable[[float, float], bool]) -> Callable[[Any, Any], bool]:
    def compare(found: Any, value: Any) -> bool:
        a, b = _moment(found), _moment(value)
        return a is not None and b is not None and test(a, b)

    return compare


def _text(found: Any) -> str:
    return "" if found is None else str(found)


def _values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "contains": lambda found, value: str(value) in _text(found),
    "not contains": lambda found, value: str(value) not in _text(found),
    "start with": lambda found, value: _text(found).startswith(str(value)),
    "end with": lambda found, value: _text(found).endswith(str(value)),
    "is": lambda found, value: _text(found) == str(value),
    "is not": lambda found, value: _text(found) != str(value),
    "in": lambda found, value: _text(found) in _values(value),
    "not in": lambda found, value: _text(found) not in _values(value),
    "empty": lambda found, _value: _text(found) == "",
    "not empty": lambda found, _value: _text(found) != "",
    "=": _numeric(lambda a, b: a == b),
    "!=": _numeric(lambda a, b: a != b),
    ">": _numeric(lambda a, b: a > b),
    "<": _numeric(lambda a, b: a < b),
    ">=": _numeric(lambda a, b: a >= b),
    "<=": _numeric(lambda a, b: a <= b),
    "before": _dated(lambda a, b: a < b),
    "after": _dated(lambda a, b: a > b),
}
