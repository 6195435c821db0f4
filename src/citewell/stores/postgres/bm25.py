"""Okapi BM25 in PostgreSQL over Citewell's own terms: a GIN index, document frequencies, search.

Scores are the embedded store's (LanceDB's full-text index): k1 1.2, b 0.75,
idf ln((N + 1) / (df + 0.5)), N and the average length over the whole table.

This is the path a search takes when no copy of the table answers it (a machine whose copy
is not current yet, or one without the memory for it). The index is PostgreSQL's own GIN
over each chunk's terms, ``string_to_array(terms, ' ')``: per term a compressed list of row
locations, what its full-text search uses. It replaced a table of one row per posting with
two b-tree indexes (term and impact, chunk and term), which at a million chunks took
19.5 GB of the database's 25; the document frequencies stay in a small table kept by every
write (``{table}_df``).

A search:

1. The query terms' document frequencies (the table's, or the caller's rows' with
   ``scope``) give their idf.
2. Candidates: the rows that hold any of the query's rarest terms, as many terms as hold
   ``budget`` rows together, found through the index within the access filter. When even
   the rarest term is in more rows, the rows holding both of the two rarest. A filter
   that keeps few rows (plan "few") takes every query term: its rows are few anyway.
   Only their id and length are read, and each is ranked as if it held each of the terms
   it was found by once.
3. The best ``rescore`` of them are read whole and scored exactly over every query term,
   tf counted in their terms.

So a search reads at most about ``budget`` rows' ids and ``rescore`` rows' terms. A row is
missed when it holds none of the terms taken (it then scores at most the other terms' idf
x (k1 + 1) each), or when a held term's tf above one, or the terms not taken, would have
lifted it into the top from outside the best ``rescore``. Agreement with an exhaustive
search: docs/benchmarks/journal.md "PostgreSQL's keyword index".
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.engine import Connection

from citewell.stores.memory.bm25 import K1, B  # one BM25 for every store
from citewell.stores.memory.scope_statistics import ScopeStatistics
from citewell.stores.postgres.schema import columns

TERMS = "string_to_array(c.terms, ' ')"  # the GIN index's expression, as queries must say it

# How a search applies its access filter, by the share of the table it keeps.
FilterPlan = Literal["all", "most", "some", "few"]


@dataclass(frozen=True)
class Candidates:
    """Which rows a search scores: those whose terms ``op`` (&&: any of, @>: all of)
    ``terms``."""

    terms: list[str]
    op: Literal["&&", "@>"]


def choose_candidates(df: dict[str, int], budget: int, every: bool = False) -> Candidates:
    """The rarest query terms whose rows add up to at most ``budget`` (every term with
    ``every``); when even the rarest is in more rows, rows holding the two rarest."""
    rarest = sorted(df, key=lambda term: (df[term], term))
    if every:
        return Candidates(rarest, "&&")
    taken, rows = [], 0
    for term in rarest:
        rows += df[term]
        if rows > budget:
            break
        taken.append(term)
    return Candidates(taken, "&&") if taken else Candidates(rarest[:2], "@>")


class KeywordIndex:
    def __init__(self, table: str, budget: int = 20_000, rescore: int = 400) -> None:
        self.chunks, self.stats = table, f"{table}_stats"
        self.df, self.index = f"{table}_df", f"{table}_terms"
        self.postings = f"{table}_postings"  # the table the index replaced (dropped)
        self.budget = budget  # rows a search finds through the index, about
        self.rescore = rescore  # of them, read and scored exactly

    # --- schema (schema.py's upgrade steps) -----------------------------------------
    def create_frequencies(self, db: Connection) -> None:
        """Version 4: document frequencies, counted from the rows when the table is new."""
        if columns(db, self.df):
            return
        db.execute(text(f"CREATE TABLE {self.df} (term text PRIMARY KEY, df integer NOT NULL)"))
        db.execute(
            text(
                f"INSERT INTO {self.df} SELECT term, count(*) FROM (SELECT DISTINCT c.id, "
                f"u.term FROM {self.chunks} c CROSS JOIN LATERAL unnest({TERMS}) AS u(term)) d "
                "GROUP BY term"
            )
        )

    def create_index(self, db: Connection) -> None:
        """Version 6: the GIN index over each row's terms, in place of the postings."""
        db.execute(
            text(
                f"CREATE INDEX IF NOT EXISTS {self.index} ON {self.chunks} "
                "USING gin (string_to_array(terms, ' '))"
            )
        )
        db.execute(text(f"DROP TABLE IF EXISTS {self.postings}"))

    # --- writes (inside the store's write transaction) ---------------------------------
    def count_terms(self, db: Connection, chunk_terms: list[str]) -> None:
        """Add the chunks' terms (one string each) to the document frequencies."""
        df = Counter(term for terms in chunk_terms for term in set(terms.split()))
        if df:
            db.execute(
                text(
                    f"INSERT INTO {self.df} SELECT * FROM unnest(CAST(:terms AS text[]), "
                    "CAST(:counts AS integer[])) ON CONFLICT (term) "
                    f"DO UPDATE SET df = {self.df}.df + EXCLUDED.df"
                ),
                {"terms": list(df), "counts": list(df.values())},
            )

    def forget_terms(self, gone: str) -> str:
        """CTEs that take the terms of the rows CTE ``gone`` deleted (RETURNING terms) off
        the document frequencies, to follow a ``WITH gone AS (DELETE ...)``."""
        return (
            ", counted AS (SELECT u.term, count(*) AS n FROM "
            f"{gone} CROSS JOIN LATERAL (SELECT DISTINCT unnest(string_to_array("
            f"{gone}.terms, ' '))) AS u(term) GROUP BY u.term), "
            f"forgot AS (UPDATE {self.df} d SET df = d.df - counted.n FROM counted "
            "WHERE d.term = counted.term)"
        )

    # --- search -------------------------------------------------------------------------
    def search(  # noqa: PLR0913 - the filter comes as SQL, its plan and scope beside it
        self,
        db: Connection,
        words: list[str],
        k: int,
        condition: str,
        params: dict[str, Any],
        plan: FilterPlan = "some",
        scope: ScopeStatistics | None = None,
    ) -> list[Any]:
        """(id, score) rows, best first; ``condition`` is the access filter on alias c,
        ``plan`` how much of the table it keeps (PostgresChunkStore._plan), ``scope`` the
        N, df and lengths of its rows, used instead of the table's (scope_statistics)."""
        chunks, length, df = self._statistics(db, words, scope)
        if not df or not chunks:
            return []
        idf = {term: _idf(chunks, found) for term, found in df.items()}
        weights = {term: times * idf[term] for term, times in Counter(words).items() if term in idf}
        picked = choose_candidates(df, self.budget, every=plan == "few")
        values = {
            **params,
            "picked": picked.terms,
            "terms": list(weights),
            "weights": list(weights.values()),
            "average": max(length / chunks, 1.0),
            # A safety net: the rows of the terms picked are counted in df (the table's,
            # wider than a filter's), but the two rarest together (@>) are not.
            "cap": 2 * self.budget if plan != "few" else None,
            "rescore": max(self.rescore, 2 * k),
            "k": k,
        }
        return list(db.execute(text(self._query(picked, condition)), values).all())

    def _query(self, picked: Candidates, condition: str) -> str:
        """Rows holding a picked term, found through the index without reading their terms
        (only id and length), ranked as if each held it once; the best ``rescore`` of them
        read whole and scored exactly. Reading a row's terms costs ~10 us (they are
        compressed, out of line), scoring them as much again: the first pass ~1 us a row."""
        if picked.op == "&&":  # a pass over the index per term, its weight beside each row
            hits = f"""
                SELECT c.id, c.length, q.weight FROM q CROSS JOIN LATERAL (
                    SELECT c.id, c.length FROM {self.chunks} c
                    WHERE {TERMS} @> ARRAY[q.term] AND {condition} LIMIT :cap) c
                WHERE q.term = ANY(CAST(:picked AS text[]))"""
        else:
            hits = f"""
                SELECT c.id, c.length, (SELECT sum(weight) FROM q
                    WHERE q.term = ANY(CAST(:picked AS text[]))) AS weight
                FROM {self.chunks} c
                WHERE {TERMS} @> CAST(:picked AS text[]) AND {condition} LIMIT :cap"""
        return f"""
            WITH q AS MATERIALIZED (SELECT * FROM unnest(CAST(:terms AS text[]),
                CAST(:weights AS float8[])) AS q(term, weight)),
            hits AS MATERIALIZED ({hits}),
            cand AS MATERIALIZED (
                SELECT id FROM hits GROUP BY id, length
                ORDER BY sum({_bm25("weight", "1", "length")}) DESC, id LIMIT :rescore),
            whole AS MATERIALIZED (
                SELECT c.id, c.length, ' ' || replace(c.terms, ' ', '  ') || ' ' AS padded
                FROM {self.chunks} c WHERE c.id IN (SELECT id FROM cand))
            SELECT id, (
                SELECT sum({_bm25("q.weight", "x.tf", "whole.length")}) FROM q
                CROSS JOIN LATERAL (SELECT CAST((octet_length(whole.padded) - octet_length(
                    replace(whole.padded, ' ' || q.term || ' ', ''))) / (octet_length(q.term)
                    + 2) AS float8) AS tf) x) AS score
            FROM whole ORDER BY score DESC, id LIMIT :k"""

    def _statistics(
        self, db: Connection, words: list[str], scope: ScopeStatistics | None
    ) -> tuple[int, float, dict[str, int]]:
        """N, the summed length and the query terms' df (those in some row)."""
        if scope is not None:
            found = {w: scope.df[w] for w in set(words) if scope.df.get(w)}
            return scope.documents, float(max(scope.total_length, 1)), found
        chunks, length = db.execute(text(f"SELECT chunks, length FROM {self.stats}")).one()
        rows = db.execute(
            text(f"SELECT term, df FROM {self.df} WHERE term = ANY(:words) AND df > 0"),
            {"words": sorted(set(words))},
        ).all()
        return int(chunks), float(length), {str(t): int(n) for t, n in rows}


def _bm25(weight: str, tf: str, length: str) -> str:
    """One term's BM25 in SQL: ``weight`` is its idf times its count in the query."""
    return (
        f"{weight} * {tf} * {K1 + 1} / ({tf} + {K1} * ({1 - B} + {B} * {length} "
        "/ CAST(:average AS float8)))"
    )


def _idf(chunks: int, df: int) -> float:
    return math.log((chunks + 1) / (df + 0.5))
