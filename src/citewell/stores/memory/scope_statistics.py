"""BM25 statistics of the rows a search may read, for the searches that read a table's own
full-text index (LanceDB's, PostgreSQL's postings) rather than postings in memory.

Those indexes count N, df and the average length over the whole table, so a caller's score
for a word would drop when another tenant's KBs hold it: a way to test any word. Searches
there take their candidates from the index (inside the access filter, as before) and score
them again with these statistics, taken from the filter's rows alone (decision 0020).

Statistics of one scope (its KB and file ids) are kept for ``max_age`` seconds (writes by
other processes are not seen sooner), or ``min_age`` after a write of this process, so a
search during ingestion counts a scope at most once a second. Kept ones were counted from
that scope's rows: they may lag a write but never take in rows of another scope. The
in-memory paths (snapshots, copies of small KBs) need none of this.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyarrow as pa

from citewell.stores.memory.bm25 import K1, B, KeywordPostings
from citewell.types import ChunkFilter

SCOPED_DEPTH = 1000  # candidates a scoped search takes from the index to score again
Scope = tuple[tuple[str, ...] | None, tuple[str, ...] | None]


@dataclass(frozen=True)
class ScopeStatistics:
    """N, the summed length and each term's document frequency over one scope's rows."""

    documents: int
    total_length: int
    df: dict[str, int]

    @classmethod
    def of(cls, terms: pa.Array | pa.ChunkedArray) -> ScopeStatistics:
        """Counted from the scope's ``terms`` column (space-separated, a row a chunk)."""
        postings = KeywordPostings.build(terms)
        counts = (postings.start[1:] - postings.start[:-1]).tolist()
        df = dict(zip(postings.vocabulary, counts, strict=True))
        return cls(postings.documents, int(postings.lengths.sum(dtype="float64")), df)

    @property
    def average_length(self) -> float:
        return max(self.total_length / self.documents, 1.0) if self.documents else 1.0

    def score(self, words: Iterable[str], terms: str) -> float:
        """BM25 of one row (its space-separated ``terms``) for a query's words."""
        row = terms.split()
        if not row or not self.documents:
            return 0.0
        tf, total = Counter(row), 0.0
        norm = K1 * (1 - B + B * len(row) / self.average_length)
        for word, times in Counter(words).items():
            found = tf.get(word, 0)
            if found:
                idf = math.log((self.documents + 1) / (self.df.get(word, 1) + 0.5))
                total += times * idf * found * (K1 + 1) / (found + norm)
        return total

    def rank(
        self, words: list[str], rows: Iterable[tuple[str, str]], k: int
    ) -> list[tuple[str, float]]:
        """(id, score) of the best k of (id, terms) rows, best first (ties by id)."""
        scored = [(chunk_id, self.score(words, terms)) for chunk_id, terms in rows]
        scored = [(c, s) for c, s in scored if s > 0]
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:k]


class ScopeStatisticsCache:
    """Statistics per scope, counted by ``read_terms(where)`` (the filter's terms column)."""

    def __init__(
        self,
        read_terms: Callable[[ChunkFilter], pa.Array | pa.ChunkedArray],
        max_age: float = 5.0,
        min_age: float = 1.0,
        size: int = 32,
    ) -> None:
        self._read, self._size = read_terms, size
        self._max_age, self._min_age = max_age, min_age
        self._kept: OrderedDict[Scope, tuple[int, float, ScopeStatistics]] = OrderedDict()
        self._lock = threading.Lock()
        self._changes = 0

    def changed(self) -> None:
        """The table changed (a write of this process): kept statistics may lag it."""
        with self._lock:
            self._changes += 1

    def get(self, where: ChunkFilter) -> ScopeStatistics:
        scope: Scope = (_key(where.kb_ids), _key(where.file_ids))
        now = time.monotonic()
        with self._lock:
            kept, changes = self._kept.get(scope), self._changes
        if kept is not None:
            counted_at, age = kept[0], now - kept[1]
            if age < (self._max_age if counted_at == changes else self._min_age):
                return kept[2]
        statistics = ScopeStatistics.of(self._read(where))
        with self._lock:
            self._kept[scope] = (changes, now, statistics)
            self._kept.move_to_end(scope)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return statistics


def _key(ids: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if ids is None else tuple(sorted(set(ids)))
