"""Markdown tables in chunking, whatever format they came from: cut only between rows; a
small one kept whole with the paragraph that introduces it; every part of a long one
carrying the caption and header row, which the LLM reads with it; offsets exact."""

from __future__ import annotations

import pytest

from citewell.answer.context import CitedSource, source_block
from citewell.answer.extractive import passage_sentences
from citewell.splitters.recursive import RecursiveSplitter
from citewell.splitters.tables import TableHeadings, find_tables
from citewell.types import Document, table_heading

pytestmark = pytest.mark.unit

HEADER = "| Flight | Origin | Gate |\n| --- | --- | --- |"


def _document(rows: int, before: str = "Some words before the table. " * 8) -> Document:
    body = "\n".join(f"| CW {100 + n} | City{n} | G{n} |" for n in range(rows))
    text = f"{before}\n\nTable 3: Departures\n\n{HEADER}\n{body}\n\nWords after it."
    return Document(text, "t.md", "text/markdown")


def _split(document: Document, size: int = 300, overlap: int = 40) -> list:
    chunks = TableHeadings(RecursiveSplitter(size, overlap)).split(document)
    for chunk in chunks:
        assert document.text[chunk.start : chunk.end] == chunk.text
    return chunks


def test_a_long_table_is_cut_between_rows_and_every_part_has_its_header():
    document = _document(40)
    chunks = [c for c in _split(document) if "| CW " in c.text]
    assert len(chunks) > 3
    for chunk in chunks:
        rows = [line for line in chunk.text.splitlines() if line.startswith("|")]
        assert all(row.endswith("|") and row.count("|") == 4 for row in rows)
        if "| Flight |" not in chunk.text:
            assert table_heading(chunk.headings) == f"Table 3: Departures\n{HEADER}"


def test_a_small_table_stays_whole_with_its_caption():
    document = _document(4, before="Intro.")
    chunks = _split(document, size=400)
    holding = [c for c in chunks if "| CW 100 |" in c.text]
    assert len(holding) == 1
    assert "Table 3: Departures" in holding[0].text and "| CW 103 |" in holding[0].text


def test_tables_are_found_with_their_caption():
    document = _document(3)
    (table,) = find_tables(document.text)
    assert document.text[table.start : table.end].startswith("| Flight |")
    assert table.caption is not None
    assert document.text[table.caption[0] : table.caption[1]] == "Table 3: Departures"


def _source(text: str, lead: str) -> CitedSource:
    return CitedSource(1, text, "f", "t.md", "text/markdown", None, 0, 1, 1.0, "c", None, lead=lead)


def test_the_llm_reads_the_header_before_rows_that_lack_it():
    lead = f"Table 3: Departures\n{HEADER}"
    block = source_block(_source("| CW 130 | City30 | G30 |", lead))
    assert f">{lead}\n| CW 130 |" in block
    whole = source_block(_source(f"{HEADER}\n| CW 1 | A | B |", lead))
    assert whole.count("| Flight |") == 1  # a chunk that has its header gets no second one


def test_table_rows_are_sentences_for_the_extractive_answer():
    sentences = [s for _, s in passage_sentences(f"Intro here.\n\n{HEADER}\n| CW 1 | Oslo | A1 |")]
    assert sentences == ["Intro here.", "Flight: CW 1; Origin: Oslo; Gate: A1"]
    headless = [s for _, s in passage_sentences("| CW 2 | Rome | B7 |")]
    assert headless == ["| CW 2 | Rome | B7 |"]  # no header to name the cells: as written
