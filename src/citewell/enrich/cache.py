"""The contexts and summaries the LLM wrote, by what made them."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import sessionmaker

from citewell.db import ensure_schema
from citewell.db.models import ChunkContextRow

SUMMARY = ""  # the chunk hash of a document's summary


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def context_key(doc_hash: str, chunk_hash: str, prompt: str, model: str) -> str:
    """(document, chunk, prompt, model): a change to any of them is a new context."""
    return text_hash("\0".join((doc_hash, chunk_hash, text_hash(prompt), model)))


class ContextCache:
    def __init__(self, engine: Engine) -> None:
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def get(self, keys: Collection[str]) -> dict[str, str]:
        if not keys:
            return {}
        query = select(ChunkContextRow.key, ChunkContextRow.text).where(
            ChunkContextRow.key.in_(list(keys))
        )
        with self._sessions() as session:
            return {row[0]: row[1] for row in session.execute(query)}

    def put(self, doc_hash: str, texts: Mapping[tuple[str, str], str], model: str) -> None:
        """``texts``: (key, chunk hash) → text, all of document ``doc_hash``."""
        with self._sessions() as session, session.begin():
            for (key, chunk_hash), text in texts.items():
                session.merge(
                    ChunkContextRow(
                        key=key, doc_hash=doc_hash, chunk_hash=chunk_hash, text=text, model=model
                    )
                )

    def latest(self, doc_hash: str, chunk_hashes: Collection[str]) -> dict[str, str]:
        """Chunk hash → the newest text kept for it in this document, whatever prompt or
        model made it (a model switch re-embeds with what the chunk was indexed with)."""
        query = (
            select(ChunkContextRow.chunk_hash, ChunkContextRow.text)
            .where(ChunkContextRow.doc_hash == doc_hash)
            .where(ChunkContextRow.chunk_hash.in_(list(chunk_hashes)))
            .order_by(ChunkContextRow.created_at)
        )
        with self._sessions() as session:
            return {row[0]: row[1] for row in session.execute(query)}
