"""Sentence vectors: each chunk's sentences, two at a time, embedded beside the chunk.

A chunk whose one sentence answers a question is ranked by its whole text's vector, which
its other sentences dilute. With ``sentence_vectors`` (server-wide or per KB) each chunk's
sentence pairs are embedded too and kept in a table of their own beside the chunk table, one
per embedding space; searches read the best pair per chunk as a third list in fusion
(``retrieval.sentences``). A pair row carries its chunk's file id and labels, so every write
that touches a file's chunks (delete, link, unlink) touches its pairs the same way
(``SpaceWriter``), and searches filter pairs by the same labels inside the store query.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from citewell.retrieval.sentences import sentence_id
from citewell.splitters.semantic import sentence_spans
from citewell.stores.base import ChunkStore, optimize_store, upsert_matrix, wait_for_training
from citewell.stores.columns import ChunkColumns, upsert_columns
from citewell.types import ChunkFilter, StoredChunk

if TYPE_CHECKING:
    import numpy as np

MIN_SENTENCE = 20  # characters: shorter ones (labels, numbers, "Results.") say too little
PAIR = 2  # sentences per embedded piece: pairs beat single sentences and triples on SciFact


def sentence_pairs(text: str) -> list[str]:
    """Each sentence of ``text`` joined with the one after it (the last one alone)."""
    found = [text[s:e].lstrip("# ").strip() for s, e in sentence_spans(text)]
    found = [f for f in found if len(f) >= MIN_SENTENCE]
    return [" ".join(found[j : j + PAIR]) for j in range(len(found))]


def sentence_rows(
    chunks: Sequence[StoredChunk], texts: Sequence[str]
) -> tuple[list[StoredChunk], list[str]]:
    """The pair rows of ``chunks`` and the texts to embed for them (``texts``: the chunks
    as embedded). A chunk without a sentence long enough is its own one piece, so every
    chunk is in the pairs' list. Rows keep their text: a new model re-embeds it as it is."""
    rows: list[StoredChunk] = []
    for chunk, text in zip(chunks, texts, strict=True):
        for n, pair in enumerate(sentence_pairs(chunk.text) or [text]):
            rows.append(
                replace(chunk, id=sentence_id(chunk.id, n), text=pair, headings=(), terms="")
            )
    return rows, [r.text for r in rows]


@dataclass(frozen=True)
class SpaceWriter:
    """Writes to an embedding space's chunk table and its sentence table together. Pairs go
    first where chunks leave, so a crash between the two leaves chunks without pairs (found
    by their own vectors), never pairs that outlive their chunk's place in a KB."""

    chunks: ChunkStore
    sentences: ChunkStore

    def upsert(self, chunks: Sequence[StoredChunk], pairs: Sequence[StoredChunk] = ()) -> None:
        self.chunks.upsert(chunks)
        if pairs:
            self.sentences.upsert(pairs)

    def upsert_matrix(
        self,
        chunks: Sequence[StoredChunk],
        vectors: np.ndarray,
        pairs: Sequence[StoredChunk] = (),
        pair_vectors: np.ndarray | None = None,
    ) -> None:
        """Chunks and pairs with their vectors as matrices (an import brings no pairs)."""
        upsert_matrix(self.chunks, chunks, vectors)
        if pairs and pair_vectors is not None:
            upsert_matrix(self.sentences, pairs, pair_vectors)

    def upsert_columns(self, columns: ChunkColumns, vectors: np.ndarray) -> None:
        """Chunks as columns with their vectors as a matrix (an import's: no pairs)."""
        upsert_columns(self.chunks, columns, vectors)

    def delete(self, where: ChunkFilter) -> int:
        self.sentences.delete(where)
        return self.chunks.delete(where)

    def link_files(self, file_ids: Sequence[str], kb_id: str, within: str | None = None) -> None:
        self.chunks.link_files(file_ids, kb_id, within)
        self.sentences.link_files(file_ids, kb_id, within)

    def unlink(self, file_id: str, kb_id: str) -> None:
        self.sentences.unlink(file_id, kb_id)
        self.chunks.unlink(file_id, kb_id)

    def optimize(self) -> None:
        """Fold recent writes into both tables' indexes (after a batch of writes)."""
        optimize_store(self.chunks)
        optimize_store(self.sentences)

    def wait_for_training(self, timeout: float | None = None) -> bool:
        """Wait for both tables' trainings under way in the background; returns whether
        none runs (``timeout`` 0: only ask)."""
        return wait_for_training(self.chunks, timeout) and wait_for_training(
            self.sentences, timeout
        )

    def wait_then_fold(self, lock: AbstractContextManager[Any], timeout: float | None) -> bool:
        """Wait for the trainings under way; once they end, fold in (holding ``lock``, the
        writers' lock) the rows written while they ran: the index a training commits holds
        the rows up to its start, and the rest would wait for the next write. Returns
        whether none runs."""
        if self.wait_for_training(0):
            return True
        if not self.wait_for_training(timeout):
            return False
        with lock:
            self.optimize()
        return True
