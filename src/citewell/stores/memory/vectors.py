"""A snapshot's vectors: float32 in memory, or int8 codes mapped with the floats on disk.

A million 384-dimensional float32 vectors are 1.5 GB; held in memory (even shared between
a machine's processes) they were half a big table's copy. A copy written to files keeps
int8 codes (one scale a row: a quarter of the size) that searches scan, and reads the
float32 rows of the few candidates they score exactly with ``pread``: those pages sit in
the page cache, which the system takes back when it needs to, not in any process.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.integer]
SCAN_BATCH = 16_384  # rows of codes turned into floats at a time
MAPPED_TAKE = 65_536  # rows: more are read through a mapping of the file, not one by one


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

    rough = exact


def int8_codes(
    matrix: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row as int8 codes and one scale: row ~ codes * scale (its largest value 127)."""
    peak = np.abs(matrix).max(axis=1) if len(matrix) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / 127, 1).astype(np.float32)
    codes = np.rint(matrix / scales[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scales


class QuantizedVectors:
    """int8 codes and scales (mapped), the float32 rows read from ``floats`` (an ``.npy``
    file of the same rows) when a candidate is scored exactly."""

    def __init__(
        self, codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float32], floats: Path
    ) -> None:
        self.codes, self.scales, self.floats = codes, scales, floats
        count, dimension = codes.shape
        self._row_bytes = dimension * 4
        self._fd = os.open(floats, os.O_RDONLY)
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
        """Those rows' float32 vectors, read in row order (a candidate a read)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.codes.shape[1]), dtype=np.float32)
        order = np.argsort(rows, kind="stable")
        size = self._row_bytes
        for n in order.tolist():
            data = os.pread(self._fd, size, self._offset + int(rows[n]) * size)
            out[n] = np.frombuffer(data, dtype=np.float32)
        return out

    def exact(self, rows: Rows, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosines from the float32 rows; many rows (``recall``'s exact search of every
        row) through a mapping of the file, in batches, dropped after."""
        if len(rows) <= MAPPED_TAKE:
            return self.take(rows) @ query
        rows = np.asarray(rows, dtype=np.int64)
        mapped = np.load(self.floats, mmap_mode="r")
        scores = np.empty(len(rows), dtype=np.float32)
        for begin in range(0, len(rows), SCAN_BATCH):
            part = rows[begin : begin + SCAN_BATCH]
            scores[begin : begin + len(part)] = mapped[part] @ query
        return scores

    def all(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return self.exact(np.arange(self.codes.shape[0]), query)

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
