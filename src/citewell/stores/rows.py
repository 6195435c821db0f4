"""A chunk as a table row: the columns both chunk stores share, and back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from citewell.types import StoredChunk

ROW_COLUMNS = [
    "id",
    "file_id",
    "kb_ids",
    "idx",
    "text",
    "start",
    "end",
    "page",
    "headings",
    "file_name",
]


def chunk_row(chunk: StoredChunk) -> dict[str, Any]:
    """The shared columns (each backend adds its vector, in its own form)."""
    return {
        "id": chunk.id,
        "file_id": chunk.file_id,
        "kb_ids": list(chunk.kb_ids),
        "idx": chunk.index,
        "text": chunk.text,
        "start": chunk.start,
        "end": chunk.end,
        "page": chunk.page,
        "headings": list(chunk.headings),
        "file_name": chunk.file_name,
        "terms": chunk.terms,
    }


def to_chunk(row: Mapping[str, Any]) -> StoredChunk:
    return StoredChunk(
        id=row["id"],
        file_id=row["file_id"],
        kb_ids=tuple(row["kb_ids"] or ()),
        index=row["idx"],
        text=row["text"],
        start=row["start"],
        end=row["end"],
        page=row["page"],
        headings=tuple(row["headings"] or ()),
        file_name=row["file_name"],
        terms=row.get("terms", ""),
    )
