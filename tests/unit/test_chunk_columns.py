"""An import's chunks as columns (stores/columns.py): the same rows an object a chunk
gave, written to the LanceDB table as they are and to other stores as chunks."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pytest

from citewell.ingest.chunk_files import ImportedFile
from citewell.ingest.chunk_rows import ChunkRows
from citewell.ingest.imports import joined
from citewell.stores.columns import COLUMNS, ChunkColumns, upsert_columns
from citewell.stores.lance.store import LanceChunkStore
from citewell.types import Chunk, ChunkFilter, StoredChunk

DIM = 8


@dataclass(frozen=True)
class ChunkSetOf:
    label: str
    shared: bool
    bm25_enriched: bool = True


FILE = ImportedFile(
    "notes/Reading list.md",
    ["Gravity bends light.", "Stars fuse hydrogen.", "Gravity bends light."],
    np.ones((3, DIM), np.float32),
    [2, None, None],
    [("Physics",), (), ("A", "B")],
)
CHUNKS = list(zip(FILE.texts, FILE.pages, FILE.headings, strict=True))


def test_the_columns_are_a_stored_chunks_fields_in_order():
    assert tuple(f.name for f in fields(StoredChunk) if f.name != "vector") == COLUMNS


@pytest.mark.parametrize("target", [ChunkSetOf("server", True), ChunkSetOf("kb-own", False)])
def test_columns_hold_the_rows_an_ingested_chunk_gets(target):
    """Ids, labels, places and BM25 terms as ``_stored_chunk`` makes them for ingestion
    (an own set's label salts its ids)."""
    rows, text = ChunkRows("english"), joined(FILE)
    made = ChunkColumns()
    rows.given_columns("file1", FILE, text[1], target, None, made)
    terms = [rows._stored_chunk("f", (), 0, Chunk(t, 0, 1), "", "").terms
             for t in rows.given_bm25_texts(FILE, target)]  # fmt: skip
    expected = [
        rows._stored_chunk(
            "file1",
            (target.label,),
            i,
            Chunk(t, start, start + len(t), page, headings),
            FILE.name,
            "",
            "" if target.shared else target.label,
            terms[i],
        )  # fmt: skip
        for i, ((t, page, headings), start) in enumerate(zip(CHUNKS, text[1], strict=True))
    ]
    assert made.chunks() == expected
    assert [text[0][s.start : s.end] for s in expected] == FILE.texts
    assert "read list" in made.terms[0]  # the file name's words (bm25_enriched_texts)


def test_an_empty_file_has_no_places():
    assert joined(ImportedFile("empty.txt", [], np.zeros((0, DIM), np.float32), [], [])) == ("", [])


def columns(ids: list[str]) -> ChunkColumns:
    made = ChunkColumns()
    for n, chunk_id in enumerate(ids):
        made.extend(ChunkColumns([chunk_id], [f"f{n}"], [("kb",)], [0], [f"text {n}"], [0],
                                 [6], [None], [()], ["a.txt"], [f"text {n}"]))  # fmt: skip
    return made


def test_the_lance_store_writes_columns_keeping_the_last_row_of_an_id(tmp_path):
    store = LanceChunkStore(tmp_path, "t", DIM)
    vectors = np.eye(3, DIM, dtype=np.float32)
    assert upsert_columns(store, columns(["a", "b", "a"]), vectors) == 3
    rows = {c.id: c for c in store.get(["a", "b"])}
    assert rows["a"].file_id == "f2" and rows["b"].file_id == "f1"
    assert store.count(ChunkFilter()) == 2


class ChunksOnly:
    """A store that takes chunks one object each (no ``upsert_columns``)."""

    def __init__(self) -> None:
        self.got: list[StoredChunk] = []

    def upsert(self, chunks):  # type: ignore[no-untyped-def]
        self.got += chunks
        return len(chunks)


def test_a_store_without_columns_gets_the_chunks_with_their_vectors():
    store = ChunksOnly()
    vectors = np.arange(2 * DIM, dtype=np.float32).reshape(2, DIM)
    assert upsert_columns(store, columns(["a", "b"]), vectors) == 2  # type: ignore[arg-type]
    assert [c.id for c in store.got] == ["a", "b"]
    assert store.got[1].vector == tuple(vectors[1].tolist())
