"""Files uploaded on their own, before any KB holds them (Open WebUI's ``POST
/api/v1/files/`` then ``/knowledge/{id}/file/add``). A stored file belongs to the owner of
the KBs that hold it, so the bytes wait here, seen only by their uploader, until they are
added to a KB; then they are ingested there and the upload remembers the file it became.
Uploads never added go after ``HOLD_SECONDS``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import sessionmaker

from citewell.blobs import BlobStore
from citewell.catalog.storage import UPLOADS
from citewell.db.models import UploadRow, new_id

HOLD_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Upload:
    id: str
    user_id: str
    name: str
    content_type: str
    size: int
    sha256: str
    created_at: float
    file_id: str = ""  # the stored file it became once added to a KB
    meta: dict[str, Any] = field(default_factory=dict)  # what the uploader sent with it


def _upload(row: UploadRow) -> Upload:
    meta = json.loads(row.meta or "{}")
    return Upload(
        row.id,
        row.user_id,
        row.name,
        row.content_type,
        row.size,
        row.sha256,
        row.created_at,
        row.file_id,
        meta if isinstance(meta, dict) else {},
    )


class Uploads:
    def __init__(self, engine: Engine, blobs: BlobStore) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self.blobs = blobs  # the file store's ``uploads/`` folder holds the bytes

    def add(
        self,
        user_id: str,
        name: str,
        content_type: str,
        data: bytes,
        meta: dict[str, Any],
        upload_id: str = "",
    ) -> Upload:
        """Hold these bytes for their uploader (``upload_id``: a given id)."""
        self.purge()
        row = UploadRow(
            id=upload_id or new_id(),
            user_id=user_id,
            name=name,
            content_type=content_type,
            size=len(data),
            sha256=sha256(data).hexdigest(),
            meta=json.dumps(meta),
            created_at=time.time(),
        )
        self.blobs.write(_blob(row.id), data)
        with self._sessions() as session, session.begin():
            session.add(row)
        return _upload(row)

    def get(self, upload_id: str, user_id: str) -> Upload | None:
        """The upload if this user made it (anyone else: as if there were none)."""
        with self._sessions() as session:
            row = session.get(UploadRow, upload_id)
            return _upload(row) if row is not None and row.user_id == user_id else None

    def read(self, upload_id: str) -> bytes | None:
        return self.blobs.read(_blob(upload_id))

    def became(self, upload_id: str, file_id: str) -> None:
        """Added to a KB as ``file_id``: the KB's store holds the bytes now."""
        with self._sessions() as session, session.begin():
            row = session.get(UploadRow, upload_id)
            if row is not None:
                row.file_id = file_id
        self.blobs.remove(_blob(upload_id))  # the KB's stored file holds them now

    def delete(self, upload_id: str) -> None:
        with self._sessions() as session, session.begin():
            session.execute(delete(UploadRow).where(UploadRow.id == upload_id))
        self.blobs.remove(_blob(upload_id))

    def purge(self) -> int:
        """Drop the bytes of uploads never added to a KB within HOLD_SECONDS."""
        cutoff = time.time() - HOLD_SECONDS
        query = select(UploadRow.id).where(
            (UploadRow.created_at < cutoff) & (UploadRow.file_id == "")
        )
        with self._sessions() as session:
            expired = list(session.scalars(query))
        for upload_id in expired:
            self.delete(upload_id)
        return len(expired)


def _blob(upload_id: str) -> str:
    if not upload_id.isalnum():
        raise ValueError(f"not an upload id: {upload_id!r}")
    return f"{UPLOADS}/{upload_id}"
