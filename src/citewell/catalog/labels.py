"""Which chunk set each knowledge base reads: the catalog's half of ``ingest.chunk_sets``.

A chunk in the store carries labels, not KB ids. A KB that keeps the server's chunking is
labelled with its own id, and KBs so labelled share one chunk set per file. A KB with its
own chunking reads a set of its own, labelled ``{kb id}~{n}``; re-chunking it builds the
next set (``pending``) beside the current one, swaps the label in one update, and deletes
the replaced set (``retired``) afterwards.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import Engine, or_, select, update
from sqlalchemy.orm import sessionmaker

from citewell.db.engine import read_sessions
from citewell.db.models import KnowledgeBaseRow
from citewell.errors import KnowledgeBaseNotFound

SEPARATOR = "~"  # never in a KB id (hex)
LABELS_TTL = 2.0  # seconds another process may read the set a swap replaced


@dataclass(frozen=True)
class KbChunkSets:
    """A KB's chunk sets: the one searches read and those being built or retired."""

    kb_id: str
    label: str  # the KB id (the shared set) or "{id}~{n}" (its own)
    pending: str = ""  # the set a re-chunk is building ("" when none)
    retired: str = ""  # the set a finished re-chunk replaced, not yet deleted
    batch: str = ""  # the re-chunk's job batch

    @property
    def shared(self) -> bool:
        return self.label == self.kb_id

    @property
    def writing(self) -> tuple[str, ...]:
        """The labels a file added to this KB now must get a chunk set in."""
        return (self.label, self.pending) if self.pending else (self.label,)

    def next_label(self, own: bool) -> str:
        """The label a re-chunk builds: a new own set, or the shared one (``own`` False)."""
        if not own:
            return self.kb_id
        used = [label_generation(x) for x in (self.label, self.pending, self.retired) if x]
        return f"{self.kb_id}{SEPARATOR}{max(used, default=0) + 1}"


@dataclass(frozen=True)
class RechunkStatus:
    """How far a KB's re-chunk is: its job batch, files queued, done and failed."""

    batch_id: str
    files: int
    done: int
    failed: int


def label_generation(label: str) -> int:
    return int(label.rpartition(SEPARATOR)[2]) if SEPARATOR in label else 0


def kb_of_label(label: str) -> str:
    return label.partition(SEPARATOR)[0]


def _sets(row: KnowledgeBaseRow) -> KbChunkSets:
    return KbChunkSets(
        row.id, row.chunk_label or row.id, row.pending_label, row.retired_label, row.rechunk_batch
    )


class ChunkLabels:
    """Reads and changes the KBs' chunk set labels. ``special()`` (remembered LABELS_TTL
    seconds, forgotten at once on a change made here) lists only the KBs that are not
    simply on the shared set, so a server without own chunking pays one cheap query."""

    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._reads = read_sessions(engine)
        self._special: tuple[float, dict[str, KbChunkSets]] | None = None

    def of(self, kb_id: str) -> KbChunkSets:
        with self._reads() as session:
            row = session.get(KnowledgeBaseRow, kb_id)
            if row is None:
                raise KnowledgeBaseNotFound(f"No knowledge base {kb_id!r}.")
            return _sets(row)

    def special(self) -> dict[str, KbChunkSets]:
        """KB id → its sets, for the KBs with an own set, a re-chunk, or a retired set."""
        now = time.monotonic()
        if self._special is not None and now - self._special[0] < LABELS_TTL:
            return self._special[1]
        query = select(KnowledgeBaseRow).where(
            or_(
                KnowledgeBaseRow.chunk_label != "",
                KnowledgeBaseRow.pending_label != "",
                KnowledgeBaseRow.retired_label != "",
            )
        )
        with self._reads() as session:
            found = {row.id: _sets(row) for row in session.scalars(query)}
        self._special = (now, found)
        return found

    def begin(self, kb_id: str, pending: str, batch: str) -> None:
        self._set(kb_id, pending_label=pending, rechunk_batch=batch)

    def abandon(self, kb_id: str) -> None:
        """Forget a re-chunk (its set must be deleted by the caller)."""
        self._set(kb_id, pending_label="", rechunk_batch="")

    def swap(self, kb_id: str) -> KbChunkSets:
        """Searches read the pending set from now on; the replaced one is retired."""
        sets = self.of(kb_id)
        if not sets.pending:
            return sets
        label = "" if sets.pending == kb_id else sets.pending
        self._set(
            kb_id, chunk_label=label, pending_label="", rechunk_batch="", retired_label=sets.label
        )
        return self.of(kb_id)

    def retired_gone(self, kb_id: str) -> None:
        self._set(kb_id, retired_label="")

    def _set(self, kb_id: str, **values: str) -> None:
        with self._sessions() as session, session.begin():
            session.execute(
                update(KnowledgeBaseRow).where(KnowledgeBaseRow.id == kb_id).values(**values)
            )
        self._special = None
