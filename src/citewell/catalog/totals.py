"""What the catalog holds, in three numbers (for metrics: no names)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from citewell.db.models import FileRow, KnowledgeBaseRow


@dataclass(frozen=True)
class CatalogTotals:
    knowledge_bases: int
    files: int
    chunks: int  # as the files record them (the store's own count may lag a write)


def catalog_totals(engine: Engine) -> CatalogTotals:
    with engine.connect() as db:
        kbs = db.scalar(select(func.count()).select_from(KnowledgeBaseRow)) or 0
        files, chunks = db.execute(
            select(func.count(), func.coalesce(func.sum(FileRow.chunk_count), 0))
        ).one()
    return CatalogTotals(int(kbs), int(files), int(chunks))
