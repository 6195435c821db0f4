"""The paths a connector keeps in a KB, with the source's version of each (catalog rows of
``knowledge_base_files`` that carry a ``connector_id``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import sessionmaker

from citewell.db.models import KnowledgeBaseFileRow


@dataclass(frozen=True)
class SyncedPath:
    path: str
    file_id: str
    version: str


class SyncedPaths:
    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def of(self, kb_id: str, connector_id: str) -> dict[str, SyncedPath]:
        query = select(
            KnowledgeBaseFileRow.path, KnowledgeBaseFileRow.file_id, KnowledgeBaseFileRow.version
        ).where(
            (KnowledgeBaseFileRow.kb_id == kb_id)
            & (KnowledgeBaseFileRow.connector_id == connector_id)
        )
        with self._sessions() as session:
            return {p: SyncedPath(p, f, v) for p, f, v in session.execute(query)}

    def record(self, kb_id: str, connector_id: str, versions: Mapping[str, str]) -> None:
        """Mark these paths of the KB as the connector's, at these versions."""
        if not versions:
            return
        with self._sessions() as session, session.begin():
            for path, version in versions.items():
                session.execute(
                    update(KnowledgeBaseFileRow)
                    .where(
                        (KnowledgeBaseFileRow.kb_id == kb_id) & (KnowledgeBaseFileRow.path == path)
                    )
                    .values(connector_id=connector_id, version=version)
                )

    def forget(self, kb_id: str, path: str) -> None:
        """Take one path out of the KB (the file stays if another path holds it)."""
        with self._sessions() as session, session.begin():
            session.execute(
                delete(KnowledgeBaseFileRow).where(
                    (KnowledgeBaseFileRow.kb_id == kb_id) & (KnowledgeBaseFileRow.path == path)
                )
            )

    def release(self, kb_id: str, connector_id: str) -> int:
        """The connector's paths become ordinary files of the KB (its delete kept them)."""
        with self._sessions() as session, session.begin():
            done = session.execute(
                update(KnowledgeBaseFileRow)
                .where(
                    (KnowledgeBaseFileRow.kb_id == kb_id)
                    & (KnowledgeBaseFileRow.connector_id == connector_id)
                )
                .values(connector_id="", version="")
            )
            return int(done.rowcount)  # type: ignore[attr-defined]
