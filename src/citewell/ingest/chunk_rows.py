"""A document's chunks as the store keeps them: ids, labels, BM25 terms, and the texts the
embedder reads. Shared by ingestion, re-chunking and re-indexing, so a chunk is made the
same way whichever of them makes it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import numpy as np

from citewell.enrich.enrichment import Enrichment
from citewell.retrieval.tokenize import terms_string
from citewell.types import Chunk, Document, StoredChunk

if TYPE_CHECKING:
    from citewell.ingest.types import ChunkTarget  # types only: it imports the stores


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def space_table(model_id: str, dimension: int) -> str:
    """One chunk table per embedding space: changing the model never mixes vectors."""
    return f"chunks_{sha256(f'{model_id}:{dimension}'.encode())[:16]}"


def sentence_table(space: str) -> str:
    """The table of a space's sentence pairs (``ingest.sentences``), beside its chunks."""
    return f"{space}_sentences"


def embed_text(text: str, headings: Sequence[str], title: str = "", prefix: str = "") -> str:
    """A chunk as embedded: prefixed with its heading path (or the title) for context, and
    with what the LLM wrote about it (``prefix``: its document's summary, its context).
    Built from what the store, catalog and context cache keep, so a new model can re-embed
    it the same way."""
    context = " > ".join(headings) or title
    if context and not text.lstrip("# ").startswith(headings[-1] if headings else context):
        text = f"{context}\n\n{text}"
    return f"{prefix}\n\n{text}" if prefix else text


def with_vector(chunk: StoredChunk, vector: Sequence[float] | np.ndarray) -> StoredChunk:
    """The chunk with its vector as Python floats (an array's ``tolist``: 5x faster than
    a float() a number, 20 microseconds a chunk at 384 dimensions)."""
    if isinstance(vector, np.ndarray):
        return replace(chunk, vector=tuple(vector.tolist()))
    return replace(chunk, vector=tuple(float(x) for x in vector))


class Passage(Protocol):
    """A chunk's text and headings (a ``Chunk``, or an imported chunk)."""

    @property
    def text(self) -> str: ...

    @property
    def headings(self) -> tuple[str, ...]: ...


class ChunkSet(Protocol):
    """What a chunk's row takes from the set it is in (a ``ChunkTarget``, or its plan)."""

    @property
    def label(self) -> str: ...

    @property
    def shared(self) -> bool: ...

    @property
    def bm25_enriched(self) -> bool: ...


class ChunkRows:
    def __init__(self, stemmer: str, bypass: bool = False) -> None:
        """``stemmer``: BM25's (bm25_stemmer); ``bypass``: nothing is chunked
        (bypass_embedding_and_retrieval: whole documents go to the LLM)."""
        self.stemmer = stemmer
        self.bypass = bypass

    def make(
        self,
        file_id: str,
        document: Document,
        target: ChunkTarget,
        name: str,
        labels: tuple[str, ...] = (),
    ) -> tuple[list[StoredChunk], list[str]]:
        """A document's chunks in one set (labelled ``labels``, else the target's) and the
        texts to embed for them."""
        chunks = [c for c in target.splitter.split(document) if c.text.strip()]
        if self.bypass:
            return [], []  # whole documents go to the LLM; nothing is chunked or embedded
        enrichment = target.enricher.enrich(document.text, chunks) if chunks else Enrichment()
        return self.rows(file_id, document, chunks, target, name, enrichment, labels)

    def rows(
        self,
        file_id: str,
        document: Document,
        chunks: Sequence[Chunk],
        chunk_set: ChunkSet,
        name: str,
        enrichment: Enrichment,
        labels: tuple[str, ...] = (),
    ) -> tuple[list[StoredChunk], list[str]]:
        """``chunks`` of a document as ``chunk_set`` stores them, and the texts to embed."""
        salt = "" if chunk_set.shared else chunk_set.label  # own sets never share a chunk id
        stored = [
            self._stored_chunk(
                file_id,
                labels or (chunk_set.label,),
                i,
                c,
                name,
                self._bm25_prefix(i, enrichment, name, document, chunk_set.bm25_enriched),
                salt,
            )
            for i, c in enumerate(chunks)
        ]
        texts = [
            embed_text(c.text, c.headings, document.title or "", enrichment.prefix(i))
            for i, c in enumerate(chunks)
        ]
        return stored, texts

    def given(
        self,
        file_id: str,
        chunks: Sequence[Chunk],
        target: ChunkTarget,
        name: str,
        terms: Sequence[str] | None = None,
    ) -> list[StoredChunk]:
        """Chunks made elsewhere (``citewell import``), as the target's set keeps them: the
        same ids, labels and BM25 terms an ingested chunk gets, without enrichment.
        ``terms``: the BM25 terms of ``given_bm25_texts``, made already (elsewhere)."""
        salt = "" if target.shared else target.label
        if terms is None:
            texts = self.given_bm25_texts(chunks, target, name)
            terms = [terms_string(t, self.stemmer) for t in texts]
        return [
            self._stored_chunk(file_id, (target.label,), i, c, name, "", salt, terms[i])
            for i, c in enumerate(chunks)
        ]

    @staticmethod
    def given_bm25_texts(chunks: Sequence[Passage], target: ChunkTarget, name: str) -> list[str]:
        """What BM25 indexes of each chunk ``given`` stores: with bm25_enriched_texts the
        file name's words, then its headings and text."""
        enriched = re.sub(r"[\W_]+", " ", name.rsplit(".", 1)[0]) if target.bm25_enriched else ""
        return [" ".join([enriched, *c.headings, c.text]).strip() for c in chunks]

    def _bm25_prefix(
        self, index: int, enrichment: Enrichment, name: str, document: Document, enriched: bool
    ) -> str:
        """What BM25 indexes with a chunk besides its text and headings: the LLM's summary
        and context, and with bm25_enriched_texts the file name (its words) and title."""
        parts = [enrichment.prefix(index)]
        if enriched:
            parts += [re.sub(r"[\W_]+", " ", name.rsplit(".", 1)[0]), document.title or ""]
        return " ".join(p for p in parts if p)

    def _stored_chunk(
        self,
        file_id: str,
        labels: tuple[str, ...],
        index: int,
        chunk: Chunk,
        name: str,
        prefix: str,
        salt: str = "",
        terms: str | None = None,
    ) -> StoredChunk:
        """``prefix``: what the LLM wrote about the chunk, searched by BM25 with it;
        ``terms``: its BM25 terms with the prefix, if made already."""
        key = f"{file_id}\0{index}\0{chunk.start}\0{chunk.end}\0{chunk.text}"
        chunk_id = sha256(f"{salt}\0{key}".encode() if salt else key.encode())
        if terms is None:
            enriched = " ".join([prefix, *chunk.headings, chunk.text]).strip()
            terms = terms_string(enriched, self.stemmer)
        return StoredChunk(
            id=chunk_id[:32],
            file_id=file_id,
            kb_ids=labels,
            index=index,
            text=chunk.text,
            start=chunk.start,
            end=chunk.end,
            page=chunk.page,
            headings=chunk.headings,
            file_name=name,
            terms=terms,
        )
