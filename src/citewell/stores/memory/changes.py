"""A big table's copy kept current by what changed since it was made, not made again.

A copy of a million chunks takes a minute of a core to make (the IVF index, the postings);
made again after every upload, searches read LanceDB (twice as slow) for that minute and
the next write starts it over. Instead the copy stays, and the rows of the files written
since (``TableChanges``: their current rows, read by the file ids a store's change log
names) are held beside it as a small exact snapshot. A search masks the copy's rows of
those files out, searches the changed rows too, and merges the two by score; the changed
rows' keyword scores use the copy's statistics for the same scope, so the two rank on one
scale. Past ``MAX_CHANGED_ROWS`` the copy is made again (snapshot_keeper).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from citewell.stores.memory.ann import MemoryVectorIndex
from citewell.stores.memory.snapshot import TableChanges, TableSnapshot
from citewell.stores.memory.vectors import RowVectors
from citewell.types import ChunkFilter, StoredChunk

MAX_CHANGED_ROWS = 50_000  # beyond this many changed rows the copy is made again


class ChangedCopy:
    """A copy and the changes since it, searched as the table they make together."""

    def __init__(self, copy: TableSnapshot, changes: TableChanges, version: int) -> None:
        self.copy, self.changes, self.version = copy, changes, version
        self.keep: npt.NDArray[np.bool_] = ~copy.files.mask(changes.files)
        self.hidden = np.flatnonzero(~self.keep)

    # what snapshot_keeper reports of the copy
    @property
    def ann(self) -> MemoryVectorIndex | None:
        return self.copy.ann

    @property
    def count(self) -> int:
        return self.copy.count

    @property
    def vectors(self) -> RowVectors:
        return self.copy.vectors

    @property
    def nbytes(self) -> int:
        return self.copy.nbytes + self.changes.rows.nbytes + self.keep.nbytes

    @property
    def changed_rows(self) -> int:
        return self.changes.rows.count

    @property
    def adds_up(self) -> bool:
        """The copy's rows less those of the changed files, plus their rows now, are as
        many as the table holds: a check that no change went unnoted (a table dropped
        and made anew, say)."""
        together = self.copy.count - len(self.hidden) + self.changed_rows
        return together == self.changes.table_rows

    def search(
        self, vector: Sequence[float], k: int, where: ChunkFilter
    ) -> list[tuple[str, float]]:
        found = self.copy.search(vector, k, where, self._keep())
        return _merged(found, self.changes.rows.search(vector, k, where), k)

    def keyword_search(
        self, words: list[str], k: int, where: ChunkFilter
    ) -> list[tuple[str, float]]:
        """BM25 over the scope's rows in the copy and in the changes together. A scope the
        filter narrows is scored with the statistics of both; a whole-table search scores
        the copy's rows with its own (computed when it was made: the changed rows are a few
        among many) and the changed rows on that scale."""
        keep, rows = self._keep(), self.changes.rows
        if not rows.count:
            return self.copy.keyword_search(words, k, where, keep)
        scope, mine = self.copy.mask(where, keep), rows.mask(where)
        if scope is None:
            found = self.copy.keyword_search(words, k, where, keep)
        else:
            given = rows.postings.statistics(words, mine)
            scores = self.copy.postings.scores(words, scope, given)
            found = self.copy.best(scores, k, lambda s: s > 0)
        theirs = self.copy.postings.statistics(words, keep if scope is None else scope)
        changed = rows.postings.scores(words, mine, theirs)
        return _merged(found, rows.best(changed, k, lambda s: s > 0), k)

    def get(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        found = self.changes.rows.get(chunk_ids)
        rest = [i for i in chunk_ids if i not in found and self._kept(i)]
        return {**found, **self.copy.get(rest)} if rest else found

    def _keep(self) -> npt.NDArray[np.bool_] | None:
        return self.keep if len(self.hidden) else None

    def _kept(self, chunk_id: str) -> bool:
        row = self.copy.row_of(chunk_id)
        return row is not None and bool(self.keep[row])


def _merged(
    first: list[tuple[str, float]], second: list[tuple[str, float]], k: int
) -> list[tuple[str, float]]:
    """The k best of two ranked lists, best first (ties: the copy's first)."""
    if not second:
        return first
    return sorted(first + second, key=lambda hit: -hit[1])[:k]
