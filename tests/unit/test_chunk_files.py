"""Reading files of chunks with their vectors (``citewell import``): JSON Lines parsed by
Arrow a block at a time, a line at a time from a block Arrow cannot take."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from citewell.errors import InvalidInput
from citewell.ingest import chunk_files
from citewell.ingest.chunk_files import read_chunk_file


def rows(count: int, **more) -> list[dict]:
    return [{"file": f"doc{n // 3}.md", "text": f"chunk {n}", "vector": [n, 0.5, -1.0], **more}
            for n in range(count)]  # fmt: skip


def write(path, lines: list[dict | str]) -> None:
    path.write_text("".join((json.dumps(r) if isinstance(r, dict) else r) + "\n" for r in lines))


def read(path) -> list[tuple[str, str, list[float], object, tuple, str]]:
    return [
        (f.name, text, vector.tolist(), page, headings, f.url)
        for f in read_chunk_file(path)
        for text, vector, page, headings in zip(
            f.texts, f.vectors, f.pages, f.headings, strict=True
        )
    ]


@pytest.fixture
def line_reads(monkeypatch) -> list[int]:
    """The row each read a line at a time began after; blocks of about 3 rows."""
    monkeypatch.setattr(chunk_files, "JSON_BLOCK", 256)
    began: list[int] = []
    lines = chunk_files._json_lines

    def spied(path, skip: int = 0):  # type: ignore[no-untyped-def]
        began.append(skip)
        return lines(path, skip)

    monkeypatch.setattr(chunk_files, "_json_lines", spied)
    return began


def test_json_lines_are_read_by_arrow_with_blank_lines_and_other_fields(tmp_path, line_reads):
    lines = rows(7, extra={"kept": False})
    lines[4] |= {"page": 2, "headings": ["Intro", "Scope"], "url": "https://x.test/doc1"}
    write(tmp_path / "a.jsonl", [*lines[:3], "", *lines[3:], "  "])
    got = read(tmp_path / "a.jsonl")
    assert line_reads == []
    assert [(name, text) for name, text, *_ in got] == [(r["file"], r["text"]) for r in lines]
    # A file's URL is its first row's: row 4 is doc1.md's second.
    assert got[4][2:] == ([4.0, 0.5, -1.0], 2, ("Intro", "Scope"), "")


def test_a_row_arrow_cannot_take_is_read_a_line_at_a_time_with_no_row_lost(tmp_path, line_reads):
    lines = rows(12)
    lines[8]["page"] = "eight"  # not a number: Arrow's column refuses it, Python takes it
    write(tmp_path / "a.jsonl", lines)
    got = read(tmp_path / "a.jsonl")
    assert [text for _, text, *_ in got] == [r["text"] for r in lines]  # each once, in order
    assert len(line_reads) == 1 and 0 < line_reads[0] <= 8


def test_a_bad_row_after_many_blocks_is_named_by_its_line(tmp_path, line_reads):
    lines = rows(12)
    del lines[9]["text"]
    write(tmp_path / "a.jsonl", ["", *lines])
    with pytest.raises(InvalidInput, match="Row 11 has no text"):
        read(tmp_path / "a.jsonl")
    assert line_reads and line_reads[0] > 0  # the blocks before were Arrow's


def test_a_parquet_row_without_a_vector_is_named(tmp_path):
    vectors = pa.array([[0.1, 0.2], None, [0.3, 0.4]], pa.list_(pa.float32()))
    table = pa.table({"file": ["a.md"] * 3, "text": ["x", "y", "z"], "vector": vectors})
    pq.write_table(table, tmp_path / "a.parquet")
    with pytest.raises(InvalidInput, match="row 2 has no vector"):
        read(tmp_path / "a.parquet")
