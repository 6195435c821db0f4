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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, pairwise
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


@dataclass(frozen=True)
class ImportedFile:
    """A file's chunks as columns, row ``i`` of each list one chunk, their vectors one
    float32 matrix (a view of the batch read, for a file within one): a million chunks as
    an object each, gathered into files and their vectors stacked again, cost the importing
    process 9 s of Python (journal, "An import's own overheads, again")."""

    name: str
    texts: list[str]
    vectors: np.ndarray  # float32, a row a chunk
    pages: list[int | None]
    headings: list[tuple[str, ...]]
    url: str = ""


class _Part(NamedTuple):
    """Consecutive rows of one file in a record batch (or one line of JSON)."""

    name: str
    url: str
    texts: list[str]
    vectors: np.ndarray
    pages: list[int | None]
    headings: list[tuple[str, ...]]


def read_chunk_file(path: Path) -> Iterator[ImportedFile]:
    """The files of ``path`` (Parquet or JSON Lines, by its extension), one at a time."""
    if not path.is_file():
        raise InvalidInput(f"{path} is not a file; give a .parquet or .jsonl file of chunks.")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        parts = _parquet_parts(path)
    elif suffix in (".jsonl", ".ndjson"):
        parts = _jsonl_parts(path)
    else:
        raise InvalidInput(f"{path.name}: give a .parquet or .jsonl file of chunks.")
    return _files(parts)


def _files(parts: Iterable[_Part]) -> Iterator[ImportedFile]:
    """Consecutive parts of one file, as that file."""
    done: set[str] = set()
    pending: list[_Part] = []
    for part in parts:
        if pending and part.name != pending[0].name:
            yield _file(pending)
            done.add(pending[0].name)
            pending = []
        if not pending and part.name in done:
            raise InvalidInput(
                f"The rows of {part.name!r} are not together; sort the rows by file, keeping "
                "each file's chunks in order."
            )
        pending.append(part)
    if pending:
        yield _file(pending)


def _file(parts: list[_Part]) -> ImportedFile:
    """A file from its parts (its URL is its first row's)."""
    first = parts[0]
    if len(parts) == 1:
        return ImportedFile(
            first.name, first.texts, first.vectors, first.pages, first.headings, first.url
        )
    width = first.vectors.shape[1]
    if any(p.vectors.shape[1] != width for p in parts):
        _unequal_vectors(first.name, [p.vectors for p in parts])
    return ImportedFile(
        first.name,
        list(chain.from_iterable(p.texts for p in parts)),
        np.concatenate([p.vectors for p in parts]),
        list(chain.from_iterable(p.pages for p in parts)),
        list(chain.from_iterable(p.headings for p in parts)),
        first.url,
    )


def _unequal_vectors(name: str, vectors: list[np.ndarray]) -> None:
    width, number = vectors[0].shape[1], 1
    for matrix in vectors:
        if matrix.shape[1] != width:
            raise InvalidInput(
                f"{name}, chunk {number}: a vector of {matrix.shape[1]} numbers, where its "
                f"chunk 1 has {width}. Import vectors made by the model the server embeds "
                "queries with (embedding_model), all of one length."
            )
        number += len(matrix)


def _parquet_parts(path: Path) -> Iterator[_Part]:
    import pyarrow.parquet as pq

    reader = pq.ParquetFile(path, pre_buffer=False, buffer_size=READ_BUFFER)
    missing = [c for c in REQUIRED if c not in reader.schema_arrow.names]
    if missing:
        raise InvalidInput(f"{path.name} has no column {', '.join(missing)}; {_columns()}")
    before = 0  # rows of the batches before this one
    for batch in reader.iter_batches(PARQUET_BATCH):
        yield from _batch_parts(batch, path.name, before)
        before += batch.num_rows


def _batch_parts(batch: Any, name: str, before: int) -> list[_Part]:
    """A record batch's rows as a part a file, checked whole before any is returned
    (``before``: rows read before it). Vectors go to numpy whole; only the other columns
    become Python objects."""
    count = batch.num_rows
    if not count:
        return []
    names, texts = batch.column("file").to_pylist(), batch.column("text").to_pylist()
    _check_rows(names, texts, before)
    vectors = _vectors(batch.column("vector"), name, before)
    columns = batch.schema.names
    pages = batch.column("page").to_pylist() if "page" in columns else [None] * count
    headings: list[tuple[str, ...]] = [()] * count
    if "headings" in columns:
        headings = [tuple(h or ()) for h in batch.column("headings").to_pylist()]
    urls = batch.column("url").to_pylist() if "url" in columns else None
    edges = [0, *_file_starts(batch.column("file")), count]
    return [
        _Part(names[a], (urls[a] or "") if urls else "", texts[a:b], vectors[a:b],
              pages[a:b], headings[a:b])
        for a, b in pairwise(edges)
    ]  # fmt: skip


def _file_starts(names: Any) -> list[int]:
    """The rows (after the first) whose file differs from the row before's."""
    import pyarrow.compute as pc

    changed = pc.not_equal(names.slice(1), names.slice(0, len(names) - 1))
    starts: list[int] = (np.flatnonzero(changed.to_numpy(zero_copy_only=False)) + 1).tolist()
    return starts


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


def _jsonl_parts(path: Path) -> Iterator[_Part]:
    """Parsed by Arrow a block at a time, on every core: Python's json took 2.5 times the
    CPU (146 s a million chunks of 384 numbers). From the first block Arrow cannot take
    on (a value of another type, a row missing a required value, vectors of two lengths)
    the rest is read a line at a time, so that an error names its line."""
    import pyarrow as pa

    done = 0  # rows returned
    try:
        for batch in _json_batches(path):
            parts = _batch_parts(batch, path.name, done)  # checked before any is returned:
            yield from parts  # a fallback from here repeats no row
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


def _json_lines(path: Path, skip: int = 0) -> Iterator[_Part]:
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
                if vector.ndim != 1:
                    raise ValueError("'vector' is not a list of numbers")
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInput(f"{path.name}, line {number}: {exc}; {_columns()}") from exc
            text, headings = _text(row.get("text"), number), tuple(row.get("headings") or ())
            name, url = _name(row.get("file"), number), row.get("url") or ""
            yield _Part(name, url, [text], vector[None], [row.get("page")], [headings])


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
