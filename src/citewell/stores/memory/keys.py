"""Strings looked up by position with no Python object per string.

A copy of a million chunks kept each id, each file id and each term as a Python string in
a dict of its own, in every process that used the copy: about 0.5 GB a million chunks a
process, which ``--workers 4`` at ten million could not afford. Here the strings stay in
an Arrow array (mapped from the copy's files) and are found through their 64-bit BLAKE2b
hashes, sorted, with the position of each: arrays that the processes of a machine share.
A found position is checked against the string itself, so a hash shared by two strings
costs a comparison, never a wrong row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

Columnar = TypeVar("Columnar", pa.Table, pa.ChunkedArray)


def take_rows(data: Columnar, rows: npt.NDArray[np.integer] | Sequence[int]) -> Columnar:
    """``data``'s rows at those positions, in their order, taken chunk by chunk: Arrow's
    own take on many chunks joins them first (a copy of the whole column each time, and
    past 2 GB of text an offset overflow: a copy of three million chunks)."""
    wanted = np.asarray(rows, dtype=np.int64)
    chunks: list[Any] = data.to_batches() if isinstance(data, pa.Table) else data.chunks
    if len(chunks) <= 1:
        return data.take(pa.array(wanted))
    bounds = np.cumsum([0, *(len(c) for c in chunks)])
    which = np.searchsorted(bounds, wanted, side="right") - 1
    order = np.argsort(which, kind="stable")
    grouped, chunk_of = wanted[order], which[order]  # sorted once, not once a chunk
    parts = []
    for number in np.unique(chunk_of).tolist():
        local = grouped[chunk_of == number] - bounds[number]
        parts.append(chunks[number].take(pa.array(local)))
    gathered = (
        pa.Table.from_batches(parts, data.schema)
        if isinstance(data, pa.Table)
        else pa.chunked_array(parts, data.type)
    )
    back = np.empty(len(order), dtype=np.int64)
    back[order] = np.arange(len(order))  # where each asked-for row landed
    return gathered.take(pa.array(back))  # a few rows: joining them is cheap


def key_hashes(keys: Iterable[str]) -> npt.NDArray[np.uint64]:
    """Each string's first 8 bytes of BLAKE2b: the same in every process (``hash()`` is
    seeded per process) and spread evenly whatever the strings."""
    digests = b"".join(hashlib.blake2b(k.encode(), digest_size=8).digest() for k in keys)
    return np.frombuffer(digests, dtype="<u8").copy()


@dataclass(frozen=True)
class KeyIndex:
    """Distinct strings and their positions in ``keys``."""

    keys: pa.Array | pa.ChunkedArray  # position -> string
    hashes: npt.NDArray[np.uint64]  # sorted
    positions: npt.NDArray[np.int32]  # positions[i]: where hashes[i]'s string is

    @classmethod
    def build(cls, keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> KeyIndex:
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        elif not isinstance(keys, pa.Array):
            keys = pa.array(list(keys), type=pa.string())
        hashes = key_hashes(keys.to_pylist())
        order = np.argsort(hashes, kind="stable").astype(np.int32)
        return cls(keys, hashes[order], order)

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[str]:
        """The strings in position order."""
        return iter(self.keys.to_pylist())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def get(self, key: str, default: int | None = None) -> int | None:
        found = self.find([key])[0]
        return int(found) if found >= 0 else default

    def find(self, wanted: Sequence[str]) -> npt.NDArray[np.int64]:
        """The position of each wanted string, -1 for one not held."""
        found = np.full(len(wanted), -1, dtype=np.int64)
        if not len(wanted) or not len(self.hashes):
            return found
        hashes = key_hashes(wanted)
        first = np.searchsorted(self.hashes, hashes, side="left").tolist()
        for n, key in enumerate(wanted):
            found[n] = self._position(key, hashes[n], first[n])
        return found

    def _position(self, key: str, hashed: np.uint64, at: int) -> int:
        """Where ``key`` is among the strings of hash ``hashed`` from ``at`` on; -1: not."""
        while at < len(self.hashes) and self.hashes[at] == hashed:
            position = int(self.positions[at])
            if self.keys[position].as_py() == key:
                return position
            at += 1
        return -1

    def at(self, positions: npt.NDArray[np.integer] | Sequence[int]) -> list[str]:
        """The strings at those positions, in their order."""
        strings: list[str] = take_rows(_chunked(self.keys), positions).to_pylist()
        return strings

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.hashes.nbytes + self.positions.nbytes)


def _chunked(array: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])


@dataclass(frozen=True)
class FileRows:
    """Each row's file as a number into ``names``, the distinct file ids."""

    numbers: npt.NDArray[np.int32]
    names: KeyIndex

    @classmethod
    def build(cls, file_ids: pa.Array | pa.ChunkedArray) -> FileRows:
        if isinstance(file_ids, pa.ChunkedArray):
            file_ids = file_ids.combine_chunks()
        encoded = pc.dictionary_encode(pc.fill_null(file_ids, ""))
        numbers = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        return cls(numbers, KeyIndex.build(encoded.dictionary))

    def mask(self, file_ids: Iterable[str]) -> npt.NDArray[np.bool_]:
        """The rows of those files."""
        numbers = self.names.find(list(file_ids))
        return np.isin(self.numbers, numbers[numbers >= 0])

    @property
    def nbytes(self) -> int:
        return int(self.numbers.nbytes + self.names.nbytes)
