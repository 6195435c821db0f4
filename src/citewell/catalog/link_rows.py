"""A file's links into KBs (``FileLink``) and their database rows: what
``Catalog.add_links`` writes, in bulk where it can."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from citewell.db.models import KnowledgeBaseFileRow, new_ordered_id

IN_LIST = 500  # ids per IN (...): well under every database's limit on parameters


@dataclass(frozen=True)
class FileLink:
    """A file in a KB: the name, uploader, time, source and URL that this KB's users see."""

    kb_id: str
    file_id: str
    path: str
    name: str  # "": the file's own name
    added_by: str
    added_at: float
    source: str = ""  # "": the file's own
    url: str = ""
    entry_id: str = ""  # the path's own id (Open WebUI's "file id" of a KB's file)


def taken_paths(session: Session, links: Sequence[FileLink]) -> set[tuple[str, str]]:
    """The (KB, path) pairs of ``links`` that a link holds already: those are merged, the
    others inserted (one statement for many rows, where a merge reads each row first)."""
    taken: set[tuple[str, str]] = set()
    for kb_id in {link.kb_id for link in links}:
        paths = list({link.path for link in links if link.kb_id == kb_id})
        for start in range(0, len(paths), IN_LIST):
            query = select(KnowledgeBaseFileRow.path).where(
                (KnowledgeBaseFileRow.kb_id == kb_id)
                & KnowledgeBaseFileRow.path.in_(paths[start : start + IN_LIST])
            )
            taken |= {(kb_id, path) for path in session.scalars(query)}
    return taken


def link_row(link: FileLink, now: float) -> KnowledgeBaseFileRow:
    """The row that replaces what a KB holds at the link's path."""
    return KnowledgeBaseFileRow(**link_values(link, now))


def new_link_values(link: FileLink, now: float) -> dict[str, Any]:
    """The columns of a link at a path its KB does not hold yet: inserted in one statement
    with the others (the ORM's flush took 0.3 ms a row, most of an import's catalog time)."""
    return {"entry_id": new_ordered_id(), **link_values(link, now)}


def link_values(link: FileLink, now: float) -> dict[str, Any]:
    return {
        "kb_id": link.kb_id,
        "file_id": link.file_id,
        "path": link.path,
        "name": link.name,
        "added_by": link.added_by,
        "added_at": link.added_at or now,
        "source": link.source,
        "url": link.url,
        # Unset, a replaced path keeps its entry id and a new one gets one.
        **({"entry_id": link.entry_id} if link.entry_id else {}),
    }
