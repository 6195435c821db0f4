"""A snapshot's vectors: float32 in memory, or int8 codes mapped with finer codes on disk.

A million 384-dimensional float32 vectors are 1.5 GB; held in memory (even shared between
a machine's processes) they were half a big table's copy. A copy written to files keeps
int8 codes (one scale a row: a quarter of the size) that searches scan, and a second int8
code a value, what the first left over in 254ths, read with ``pread`` for the few
candidates scored finely: together a 16-bit code, each value within 1/64,516 of its row's
largest (scores within about 1e-5 of float32's). Those pages sit in the page cache, which
the system takes back when it needs to, not in any process. The float32 rows themselves
stay in the store alone: kept in the copy too, they were 1.5 GB of disk a million chunks
(docs/decisions/0043-the-copy-scores-with-16-bit-codes.md).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.integer]
SCAN_BATCH = 16_384  # rows of codes turned into floats at a time
MAPPED_TAKE = 65_536  # rows: more are read through a mapping of the file, not one by one
FINE = 254  # a fine code counts 254ths of a scale


class RowVectors(Protocol):
    """Vectors by row: exact scores, and a cheaper approximate pass."""

    @property
    def shape(self) -> tuple[int, int]: ...

    @property
    def nbytes(self) -> int: ...

    @property
    def shared(self) -> bool: ...

    def take(self, rows: Rows) -> npt.NDArray[np.float32]: ...

    def exact(self, rows: Rows, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]: ...

    def rough(self, rows: Rows, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]: ...

    def all(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]: ...

    def blocks(self) -> Iterator[tuple[int, npt.NDArray[np.float32]]]: ...


class FloatVectors:
    """float32 rows in memory: every score exact."""

    def __init__(self, matrix: npt.NDArray[np.float32]) -> None:
        self.matrix = matrix

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape  # type: ignore[return-value]

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes)

    @property
    def shared(self) -> bool:
        return isinstance(self.matrix, np.memmap)

    def take(self, rows: Rows) -> npt.NDArray[np.float32]:
        return self.matrix[rows]

    def exact(self, rows: Rows, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return self.matrix[rows] @ query

    def all(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return self.matrix @ query

    def blocks(self) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """Every row, ``SCAN_BATCH`` at a time: (first row, rows)."""
        for begin in range(0, self.matrix.shape[0], SCAN_BATCH):
            yield begin, self.matrix[begin : begin + SCAN_BATCH]

    rough = exact


def column_matrix(column: Any) -> npt.NDArray[np.float32]:
    """An Arrow list column of vectors of one length (chunked or not) as one float32
    matrix."""
    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()
    if not len(column):
        return np.zeros((0, getattr(column.type, "list_size", 0)), dtype=np.float32)
    flat = column.flatten().to_numpy(zero_copy_only=False)
    matrix: npt.NDArray[np.float32] = flat.astype(np.float32, copy=False)
    return matrix.reshape(len(column), -1)


def int8_codes(
    matrix: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row as int8 codes and one scale: row ~ codes * scale (its largest value 127)."""
    peak = np.abs(matrix).max(axis=1) if len(matrix) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / 127, 1).astype(np.float32)
    codes = np.rint(matrix / scales[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scales


def fine_codes(
    matrix: npt.NDArray[np.float32], codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float32]
) -> npt.NDArray[np.int8]:
    """What ``codes`` left of each value, in 254ths of a scale (at most half a scale, so
    within -127..127): row ~ (codes + fine / FINE) * scale."""
    left = matrix / scales[:, None] - codes
    fine: npt.NDArray[np.int8] = np.rint(left * FINE).clip(-127, 127).astype(np.int8)
    return fine


def decoded(
    codes: npt.NDArray[np.int8], fine: npt.NDArray[np.int8], scales: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """float32 rows from their two codes and scales."""
    rows = codes.astype(np.float32)
    rows += fine.astype(np.float32) * (1 / FINE)
    rows *= scales[:, None]
    return rows


class QuantizedVectors:
    """int8 codes and scales (mapped), the fine codes read from ``fine`` (an ``.npy`` file
    of the same rows) when a candidate is scored finely."""

    def __init__(
        self, codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float32], fine: Path
    ) -> None:
        self.codes, self.scales, self.fine = codes, scales, fine
        count, dimension = codes.shape
        self._row_bytes = dimension
        self._fd = os.open(fine, os.O_RDONLY)
        os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_RANDOM)  # a row a read: no readahead
        weakref.finalize(self, os.close, self._fd)
        # an .npy file's rows run to its end, after the header
        self._offset = os.fstat(self._fd).st_size - count * self._row_bytes

    @property
    def shape(self) -> tuple[int, int]:
        return self.codes.shape  # type: ignore[return-value]

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.scales.nbytes)

    @property
    def shared(self) -> bool:
        return True

    def take(self, rows: Rows) -> npt.NDArray[np.float32]:
        """Those rows' vectors, decoded from both codes (the fine ones read in row order, a
        candidate a read)."""
        rows = np.asarray(rows, dtype=np.int64)
        fine = np.empty((len(rows), self.codes.shape[1]), dtype=np.int8)
        size = self._row_bytes
        for n in np.argsort(rows, kind="stable").tolist():
            data = os.pread(self._fd, size, self._offset + int(rows[n]) * size)
            fine[n] = np.frombuffer(data, dtype=np.int8)
        return decoded(self.codes[rows], fine, self.scales[rows])

    def exact(self, rows: Rows, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosines from both codes; many rows (``recall``'s exact search of every row)
        through a mapping of the fine codes' file, in batches, dropped after."""
        if len(rows) <= MAPPED_TAKE:
            return self.take(rows) @ query
        rows = np.asarray(rows, dtype=np.int64)
        mapped = np.load(self.fine, mmap_mode="r")
        scores = np.empty(len(rows), dtype=np.float32)
        for begin in range(0, len(rows), SCAN_BATCH):
            part = rows[begin : begin + SCAN_BATCH]
            matrix = decoded(self.codes[part], mapped[part], self.scales[part])
            scores[begin : begin + len(part)] = matrix @ query
        return scores

    def all(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        scores = np.empty(self.codes.shape[0], dtype=np.float32)
        for begin, rows in self.blocks():
            scores[begin : begin + len(rows)] = rows @ query
        return scores

    def blocks(self) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """Every row decoded from both codes, ``SCAN_BATCH`` at a time, in order: slices
        of the mappings (taking rows by index was several times slower)."""
        mapped = np.load(self.fine, mmap_mode="r")
        for begin in range(0, self.codes.shape[0], SCAN_BATCH):
            end = begin + SCAN_BATCH
            yield begin, decoded(self.codes[begin:end], mapped[begin:end], self.scales[begin:end])

    def rough(self, rows: Rows, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Scores from the int8 codes (within about 1 % of the cosine), in batches so a
        big filter never holds its rows as floats at once."""
        rows = np.asarray(rows, dtype=np.int64)
        scores = np.empty(len(rows), dtype=np.float32)
        for begin in range(0, len(rows), SCAN_BATCH):
            part = rows[begin : begin + SCAN_BATCH]
            scores[begin : begin + len(part)] = (
                self.codes[part].astype(np.float32) @ query
            ) * self.scales[part]
        return scores
