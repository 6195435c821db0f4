"""Okapi BM25 over a snapshot's terms column, in numpy: keyword search for small tables.

LanceDB's full-text query costs 10-15 ms on a 10,000-chunk table (most of it fixed cost
before any posting is read); the same scores from arrays in memory take well under one. The
definition is the one both stores already use (LanceDB's index and postgres_bm25): k1 1.2,
b 0.75, idf ln((N + 1) / (df + 0.5)), a query term counted as often as it occurs. Tokens
are the stored terms split on whitespace.

N, df and the average length are taken over the rows a search may read (``allowed``), never
over the whole table: statistics over other tenants' rows would tell a caller which words
they store (a word another KB holds lowers its idf). A search over every row uses the
impacts computed when the postings were built; a narrower one recomputes them from each
posting's tf and its row's length (decision 0020).

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

from citewell.stores.memory.keys import KeyIndex

K1, B = 1.2, 0.75
BATCH_ROWS = 131_072


@dataclass(frozen=True)
class TermStatistics:
    """What BM25 reads from a scope beside a row's own counts: the rows in it, their average
    length, and how many of them hold each query word."""

    documents: int
    average: float
    df: dict[str, int]


@dataclass(frozen=True)
class KeywordPostings:
    vocabulary: dict[str, int] | KeyIndex  # term -> number (KeyIndex: a mapped copy's)
    start: npt.NDArray[np.int64]  # len(vocabulary) + 1 offsets into rows/impact
    rows: npt.NDArray[np.int32]
    impact: npt.NDArray[np.floating]  # tf part with the whole table's average length
    documents: int
    tf: npt.NDArray[np.unsignedinteger]  # per posting, for scores scoped to fewer rows
    lengths: npt.NDArray[np.float32]  # per row, in terms
    k1: float = K1
    b: float = B

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
            found = batch_postings(batch, begin, vocabulary, lengths)
            if found is not None:
                parts.append(found)
        row_lengths = lengths.astype(np.float32)
        if not parts:
            empty = np.zeros(0, dtype=np.int32)
            start = np.zeros(1, dtype=np.int64)
            no_tf = empty.astype(np.uint16)
            return cls(
                {}, start, empty, empty.astype(np.float32), documents, no_tf, row_lengths, k1, b
            )
        term, rows, tf = (np.concatenate(column) for column in zip(*parts, strict=True))
        del parts
        order = np.argsort(term, kind="stable")  # batches come in row order: rows stay sorted
        start = np.searchsorted(term[order], np.arange(len(vocabulary) + 1)).astype(np.int64)
        del term
        rows, counts = rows[order], np.minimum(tf[order], 65_535).astype(np.uint16)
        del order, tf
        average = max(float(lengths.mean()), 1.0)
        impact = tf_part(counts, row_lengths[rows], average, k1, b)
        return cls(vocabulary, start, rows, impact, documents, counts, row_lengths, k1, b)

    def scores(
        self,
        words: list[str],
        allowed: npt.NDArray[np.bool_] | None = None,
        given: TermStatistics | None = None,
    ) -> npt.NDArray[np.float32]:
        """The BM25 score of every row for a query's terms, with N, df and the average
        length of the ``allowed`` rows alone (0 where no term occurs, and outside
        ``allowed``: adding only a small KB's share of a big table's postings is cheaper
        than adding them all and masking a million scores after). ``given``: the statistics
        of the scope's other rows, added to these rows' own (a table's changed rows scored
        as rows of its copy)."""
        scores = np.zeros(self.documents, dtype=np.float32)
        documents = self.documents if allowed is None else int(np.count_nonzero(allowed))
        if documents == self.documents and given is None:
            allowed = None  # every row: the stored impacts are the scoped ones
        elif documents == 0:
            return scores
        elif allowed is None:
            allowed = np.ones(self.documents, dtype=bool)  # impacts with the given average
        average = 0.0 if allowed is None else self._average_length(allowed, documents)
        own = documents
        if given is not None:
            documents += given.documents
            average = (average * own + given.average * given.documents) / max(documents, 1)
        for word, times in Counter(words).items():
            term = self.vocabulary.get(word)
            if term is None:
                continue
            rows, impact = self._postings(term, allowed, average)
            if len(rows):
                df = len(rows) + (given.df.get(word, 0) if given is not None else 0)
                idf = math.log((documents + 1) / (df + 0.5))
                scores[rows] += np.float32(times * idf) * impact  # a row once per term
        return scores

    def statistics(
        self, words: list[str], allowed: npt.NDArray[np.bool_] | None = None
    ) -> TermStatistics:
        """N, the average length and each word's df over the ``allowed`` rows."""
        documents = self.documents if allowed is None else int(np.count_nonzero(allowed))
        if allowed is None or documents == self.documents:
            average = max(float(self.lengths.mean(dtype=np.float64)), 1.0) if documents else 1.0
            allowed = None
        else:
            average = self._average_length(allowed, documents) if documents else 1.0
        df = {}
        for word in set(words):
            term = self.vocabulary.get(word)
            if term is not None:
                rows = self.rows[self.start[term] : self.start[term + 1]]
                df[word] = len(rows) if allowed is None else int(np.count_nonzero(allowed[rows]))
        return TermStatistics(documents, average, df)

    def _postings(
        self, term: int, allowed: npt.NDArray[np.bool_] | None, average: float
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """A term's rows and tf parts: as stored, or within ``allowed`` with its average
        length (the stored impacts hold the whole table's)."""
        begin, end = self.start[term], self.start[term + 1]
        rows = self.rows[begin:end]
        if allowed is None:
            return rows, self.impact[begin:end]
        kept = allowed[rows]
        rows, tf = rows[kept], self.tf[begin:end][kept]
        return rows, tf_part(tf, self.lengths[rows], average, self.k1, self.b)

    def _average_length(self, allowed: npt.NDArray[np.bool_], documents: int) -> float:
        return max(float(self.lengths[allowed].sum(dtype=np.float64)) / documents, 1.0)


def tf_part(
    tf: npt.NDArray[np.integer],
    lengths: npt.NDArray[np.float32],
    average: float,
    k1: float,
    b: float,
) -> npt.NDArray[np.float32]:
    """BM25's term-frequency part of each posting (what idf multiplies), in float32."""
    times = tf.astype(np.float32)
    norm = np.float32(k1 * (1 - b)) + np.float32(k1 * b / average) * lengths
    return (times * np.float32(k1 + 1) / (times + norm)).astype(np.float32, copy=False)


def batch_postings(
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
