"""Okapi BM25 over a snapshot's terms column, in numpy: keyword search for small tables.

LanceDB's full-text query costs 10-15 ms on a 10,000-chunk table (most of it fixed cost
before any posting is read); the same scores from arrays in memory take well under one. The
definition is the one both stores already use (LanceDB's index and postgres_bm25): k1 1.2,
b 0.75, idf ln((N + 1) / (df + 0.5)), N and the average length over the whole table, a
query term counted as often as it occurs. Tokens are the stored terms split on whitespace.

Postings are grouped by term: ``rows[start[t]:start[t + 1]]`` are the rows holding term
``t`` and ``impact`` the matching tf parts, so a query touches only its terms' postings.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

K1, B = 1.2, 0.75
BATCH_ROWS = 131_072


@dataclass(frozen=True)
class KeywordPostings:
    vocabulary: dict[str, int]
    start: npt.NDArray[np.int64]  # len(vocabulary) + 1 offsets into rows/impact
    rows: npt.NDArray[np.int32]
    impact: npt.NDArray[np.float32]
    documents: int

    @classmethod
    def build(
        cls, terms: pa.ChunkedArray | pa.Array, k1: float = K1, b: float = B
    ) -> KeywordPostings:
        """Postings of a column of space-separated terms (one row per chunk). ``k1`` and
        ``b`` other than the stores' are for tuning experiments (benchmarks/tune_bm25.py).
        Rows are read in batches: split at once, a million chunks' words took 6.5 GB more
        than the postings they became."""
        documents = len(terms)
        vocabulary: dict[str, int] = {}
        lengths = np.zeros(documents, dtype=np.float64)
        parts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]]]
        parts = []
        for begin in range(0, documents, BATCH_ROWS):
            batch = terms.slice(begin, BATCH_ROWS)
            found = _batch_postings(batch, begin, vocabulary, lengths)
            if found is not None:
                parts.append(found)
        if not parts:
            empty = np.zeros(0, dtype=np.int32)
            return cls({}, np.zeros(1, dtype=np.int64), empty, empty.astype(np.float32), documents)
        term, rows, tf = (np.concatenate(column) for column in zip(*parts, strict=True))
        del parts
        order = np.argsort(term, kind="stable")  # batches come in row order: rows stay sorted
        start = np.searchsorted(term[order], np.arange(len(vocabulary) + 1)).astype(np.int64)
        del term
        rows, times = rows[order], tf[order].astype(np.float32)
        del order, tf
        average = max(float(lengths.mean()), 1.0)
        row_norm = (k1 * (1 - b + b * lengths / average)).astype(np.float32)
        impact = times * np.float32(k1 + 1) / (times + row_norm[rows])  # float32: half the temps
        return cls(vocabulary, start, rows, impact, documents)

    def scores(
        self, words: list[str], allowed: npt.NDArray[np.bool_] | None = None
    ) -> npt.NDArray[np.float32]:
        """The BM25 score of every row for a query's terms (0 where none occurs, and
        outside ``allowed``: adding only a small KB's share of a big table's postings is
        cheaper than adding them all and masking a million scores after)."""
        scores = np.zeros(self.documents, dtype=np.float32)
        for word, times in Counter(words).items():
            term = self.vocabulary.get(word)
            if term is None:
                continue
            begin, end = self.start[term], self.start[term + 1]
            idf = math.log((self.documents + 1) / (end - begin + 0.5))
            rows, impact = self.rows[begin:end], self.impact[begin:end]
            if allowed is not None:
                kept = allowed[rows]
                rows, impact = rows[kept], impact[kept]
            scores[rows] += np.float32(times * idf) * impact  # a row once per term: += is safe
        return scores


def _batch_postings(
    terms: pa.ChunkedArray | pa.Array,
    first_row: int,
    vocabulary: dict[str, int],
    lengths: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]] | None:
    """(term, row, tf) of one batch of rows, sorted by term then row; new words join
    ``vocabulary`` in the order they first occur, the rows' lengths go into ``lengths``."""
    count = len(terms)
    lists = pc.utf8_split_whitespace(pc.fill_null(terms, ""))
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    words = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists).to_numpy().astype(np.int64)
    real = pc.not_equal(words, "")  # Arrow splits "" and edge spaces into empty words
    words, parents = words.filter(real), parents[real.to_numpy(zero_copy_only=False)]
    if len(words) == 0:
        return None
    lengths[first_row : first_row + count] = np.bincount(parents, minlength=count)
    encoded = pc.dictionary_encode(words)
    codes = encoded.indices.to_numpy().astype(np.int64)
    known = [vocabulary.setdefault(w, len(vocabulary)) for w in encoded.dictionary.to_pylist()]
    # One key per (term, row): sorted, they group the batch's postings by term.
    keys, tf = np.unique(codes * count + parents, return_counts=True)
    local, rows = np.divmod(keys, count)
    term = np.asarray(known, dtype=np.int32)[local]
    return term, (rows + first_row).astype(np.int32), tf.astype(np.int32)
