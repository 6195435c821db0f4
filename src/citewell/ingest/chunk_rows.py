"""A document's chunks as the store keeps them: ids, labels, BM25 terms, and the texts the
embedder reads. Shared by ingestion, re-chunking and re-indexing, so a chunk is made the
same way whichever of them makes it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Protocol

import numpy as np

from citewell.enrich.enrichment import Enrichment
from citewell.retrieval.tokenize import terms_string
from citewell.types import Chunk, Document, StoredChunk

if TYPE_CHECKING:
    from citewell.ingest.chunk_files import ImportedFile
    from citewell.ingest.types import ChunkTarget  # types only: both import the stores
    from citewell.stores.columns import ChunkColumns


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def chunk_key(file_id: str, index: int, start: int, end: int, text: str, salt: str = "") -> str:
    """A chunk's id: its file, place and text hashed (``salt``: an own chunk set's label,
    so that two sets never share an id)."""
    key = f"{file_id}\0{index}\0{start}\0{end}\0{text}"
    return sha256(f"{salt}\0{key}".encode() if salt else key.encode())[:32]


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

    def given_columns(
        self,
        file_id: str,
        file: ImportedFile,
        starts: Sequence[int],
        target: ChunkSet,
        terms: Sequence[str] | None,
        into: ChunkColumns,
    ) -> None:
        """A file's chunks made elsewhere (``citewell import``) added to ``into`` as the
        target's set keeps them: the same ids, labels and BM25 terms an ingested chunk gets,
        without enrichment (its chunks begin at ``starts`` of its text; ``terms``: their BM25
        terms, if made already). No object a chunk: an import's million of them cost more
        than its write (stores/columns.py)."""
        if terms is None:
            indexed = self.given_bm25_texts(file, target)
            terms = [terms_string(t, self.stemmer) for t in indexed]
        salt, texts = ("" if target.shared else target.label), file.texts
        ends = [start + len(text) for start, text in zip(starts, texts, strict=True)]
        count = len(texts)
        into.id += map(partial(chunk_key, file_id), range(count), starts, ends, texts,
                       repeat(salt, count))  # fmt: skip
        into.file_id += repeat(file_id, count)
        into.kb_ids += repeat((target.label,), count)
        into.index += range(count)
        into.text += texts
        into.start += starts
        into.end += ends
        into.page += file.pages
        into.headings += file.headings
        into.file_name += repeat(file.name, count)
        into.terms += terms

    @staticmethod
    def given_bm25_texts(file: ImportedFile, target: ChunkSet) -> list[str]:
        """What BM25 indexes of each chunk ``given_columns`` stores: with bm25_enriched_texts
        the file name's words, then its headings and text."""
        name = file.name
        enriched = re.sub(r"[\W_]+", " ", name.rsplit(".", 1)[0]) if target.bm25_enriched else ""
        return [
            " ".join([enriched, *headings, text]).strip()
            for text, headings in zip(file.texts, file.headings, strict=True)
        ]

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
        chunk_id = chunk_key(file_id, index, chunk.start, chunk.end, chunk.text, salt)
        if terms is None:
            enriched = " ".join([prefix, *chunk.headings, chunk.text]).strip()
            terms = terms_string(enriched, self.stemmer)
        return StoredChunk(
            id=chunk_id,
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
