"""Files of chunks made elsewhere, with their vectors: what ``citewell import`` reads.

One row per chunk, the rows of a file together and in order:

- ``file`` (text, required): the file's name in the knowledge base;
- ``text`` (text, required): the chunk's text;
- ``vector`` (list of floats, required): its embedding, by the model this server embeds
  queries with;
- ``page`` (integer) and ``headings`` (list of texts), where the chunk lies; ``url``, where
  the file came from (read from a file's first row).

Parquet (``.parquet``) is read in record batches, its vectors as one array per batch;
JSON Lines (``.jsonl``, ``.ndjson``) too, parsed by Arrow, and a line at a time from the
first block Arrow cannot take. A file's rows that come back after
another file's are refused: the file would be imported twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from citewell.errors import InvalidInput

PARQUET_BATCH = 16384  # rows read at a time
# Column chunks read through a 1 MiB buffer rather than each row group whole: pyarrow and
# pandas write row groups of up to a million rows, and a million-chunk file read whole took
# 4-12 s of the kernel's time (fresh pages for 1.7 GB, zeroed) and 1.85 GB of memory,
# against 0.3 s and 0.3 GB (docs/benchmarks/journal.md, "An import's own overheads").
READ_BUFFER = 1 << 20
REQUIRED = ("file", "text", "vector")
JSON_BLOCK = 32 << 20  # bytes of JSON Lines parsed at a time: about 4,000 rows of 384 numbers


class ImportedChunk(NamedTuple):
    """A tuple, not a frozen dataclass: one is made for every chunk imported, and a tuple
    takes 0.21 us to make against the frozen dataclass's 0.57."""

    text: str
    vector: np.ndarray  # float32, one dimension
    page: int | None = None
    headings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportedFile:
    name: str
    chunks: tuple[ImportedChunk, ...]
    url: str = ""


def read_chunk_file(path: Path) -> Iterator[ImportedFile]:
    """The files of ``path`` (Parquet or JSON Lines, by its extension), one at a time."""
    if not path.is_file():
        raise InvalidInput(f"{path} is not a file; give a .parquet or .jsonl file of chunks.")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        rows = _parquet_rows(path)
    elif suffix in (".jsonl", ".ndjson"):
        rows = _jsonl_rows(path)
    else:
        raise InvalidInput(f"{path.name}: give a .parquet or .jsonl file of chunks.")
    return _files(rows)


def _files(rows: Iterator[tuple[str, str, ImportedChunk]]) -> Iterator[ImportedFile]:
    """Consecutive rows of one file, as that file."""
    done: set[str] = set()
    name, url, chunks = "", "", list[ImportedChunk]()
    for file, file_url, chunk in rows:
        if file != name:
            if chunks:
                yield ImportedFile(name, tuple(chunks), url)
                done.add(name)
            if file in done:
                raise InvalidInput(
                    f"The rows of {file!r} are not together; sort the rows by file, keeping "
                    "each file's chunks in order."
                )
            name, url, chunks = file, file_url, []
        chunks.append(chunk)
    if chunks:
        yield ImportedFile(name, tuple(chunks), url)


def _parquet_rows(path: Path) -> Iterator[tuple[str, str, ImportedChunk]]:
    import pyarrow.parquet as pq

    reader = pq.ParquetFile(path, pre_buffer=False, buffer_size=READ_BUFFER)
    missing = [c for c in REQUIRED if c not in reader.schema_arrow.names]
    if missing:
        raise InvalidInput(f"{path.name} has no column {', '.join(missing)}; {_columns()}")
    before = 0  # rows of the batches before this one
    for batch in reader.iter_batches(PARQUET_BATCH):
        yield from _batch_rows(batch, path.name, before)
        before += batch.num_rows


def _batch_rows(batch: Any, name: str, before: int) -> Iterator[tuple[str, str, ImportedChunk]]:
    """A record batch's rows, checked whole before any is returned (``before``: rows read
    before it). Vectors go to numpy whole; only the other columns become Python objects."""
    if not batch.num_rows:
        return iter(())
    columns = {n: batch.column(n).to_pylist() for n in batch.schema.names if n != "vector"}
    vectors = list(_vectors(batch.column("vector"), name, before))
    names, texts = columns["file"], columns["text"]
    _check_rows(names, texts, before)
    pages = columns.get("page") or repeat(None)
    headings = [tuple(h or ()) for h in columns["headings"]] if "headings" in columns else []
    urls = [u or "" for u in columns["url"]] if "url" in columns else []
    chunks = map(ImportedChunk, texts, vectors, pages, headings or repeat(()))
    return zip(names, urls or repeat(""), chunks, strict=False)  # repeat: no end


def _check_rows(names: list[Any], texts: list[Any], before: int) -> None:
    """Every row of a batch has a file name and a text (``before``: rows read before it)."""
    nameless = next((i for i, n in enumerate(names) if not (isinstance(n, str) and n.strip())), -1)
    if nameless >= 0:
        _name(names[nameless], before + nameless + 1)
    textless = next((i for i, t in enumerate(texts) if not isinstance(t, str)), -1)
    if textless >= 0:
        _text(texts[textless], before + textless + 1)


def _vectors(column: Any, name: str, before: int = 0) -> np.ndarray:
    """A batch's vectors as one float32 matrix (list or fixed-size-list column)."""
    if column.null_count:  # flattened, the other rows' numbers would close the gap
        row = column.is_null().to_pylist().index(True)
        raise InvalidInput(f"{name}: row {before + row + 1} has no vector; {_columns()}")
    try:
        values = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        return values.reshape(len(column), -1)
    except (ValueError, TypeError) as exc:
        raise InvalidInput(
            f"{name}: every vector must be a list of numbers of one length ({exc})."
        ) from exc


def _jsonl_rows(path: Path) -> Iterator[tuple[str, str, ImportedChunk]]:
    """Parsed by Arrow a block at a time, on every core: Python's json took 2.5 times the
    CPU (146 s a million chunks of 384 numbers). From the first block Arrow cannot take
    on (a value of another type, a row missing a required value, vectors of two lengths)
    the rest is read a line at a time, so that an error names its line."""
    import pyarrow as pa

    done = 0  # rows returned
    try:
        for batch in _json_batches(path):
            rows = _batch_rows(batch, path.name, done)  # checked before any row is returned:
            yield from rows  # a fallback from here repeats none
            done += batch.num_rows
        return
    except (pa.ArrowInvalid, InvalidInput):
        pass
    yield from _json_lines(path, skip=done)


def _json_batches(path: Path) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.json as pj

    columns = pa.schema(
        [("file", pa.string()), ("text", pa.string()), ("vector", pa.list_(pa.float32())),
         ("page", pa.int32()), ("headings", pa.list_(pa.string())), ("url", pa.string())]
    )  # fmt: skip
    options = pj.ParseOptions(explicit_schema=columns, unexpected_field_behavior="ignore")
    yield from pj.open_json(path, pj.ReadOptions(block_size=JSON_BLOCK), options)


def _json_lines(path: Path, skip: int = 0) -> Iterator[tuple[str, str, ImportedChunk]]:
    """The rows of a JSON Lines file a line at a time, after its first ``skip`` rows."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            if skip:
                skip -= 1
                continue
            try:
                row = json.loads(line)
                vector = np.asarray(row["vector"], dtype=np.float32)
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInput(f"{path.name}, line {number}: {exc}; {_columns()}") from exc
            page, headings = row.get("page"), row.get("headings") or ()
            chunk = ImportedChunk(_text(row.get("text"), number), vector, page, tuple(headings))
            yield _name(row.get("file"), number), row.get("url") or "", chunk


def _name(value: Any, row: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"Row {row} has no file name; {_columns()}")
    return value


def _text(value: Any, row: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"Row {row} has no text; {_columns()}")
    return value


def _columns() -> str:
    return "each row needs 'file', 'text' and 'vector' (see docs/user-guide.md, Importing chunks)."
