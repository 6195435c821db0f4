"""In-memory copies of single small knowledge bases of a big chunk table, for either store.

A search filtered to one small KB of a million-chunk table pays for the whole table: in
LanceDB 250 probes and fetches from fragments all over it (35-45 ms a vector search); in a
whole table's copy a million-row mask and keyword postings read whole for every term (a
hybrid search in one KB of 100 took 1.4-1.8x the same search in a copy of that KB alone).
So the rows of a KB filter that keeps few rows are kept in memory (vectors, ids, row text,
BM25 postings), searched exactly, within a memory budget, least recently used out first.
Keyword scores in a copy count the KB as the collection (its own document count, lengths
and term frequencies), as Open WebUI's per-collection BM25 does, and as a whole table's
copy scores a filtered search.

A copy is used only while it is known to hold the table's latest version. Other KBs'
writes must not throw it away (a busy server ingests all the time), so each store says
how to tell that a copy made at one version still holds exactly its filter's rows at a
later one (``KbCopyView.keep``): LanceDB by the fragments that hold its rows
(lance/kb_snapshots.py), PostgreSQL by the change log's files (postgres/kb_copies.py).
Checks and builds run on one background thread; a search never waits for them: it reads
the store's other way (the table, or the whole table's copy) meanwhile.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from citewell.machine import lower_priority
from citewell.stores.background import StoreCalls
from citewell.stores.base import KbCopyStats
from citewell.stores.memory.snapshot import TableSnapshot
from citewell.types import StoredChunk

log = logging.getLogger(__name__)

CHECK_INTERVAL = 1.0  # seconds between reads of the table's version (other processes' writes)
PENDING_BUILDS = 4  # KB filters waiting for a copy; more requests are dropped, not queued
HALF_LIFE = 60.0  # seconds: search counts halve this often (how "hot" a KB is)
IDLE_SECONDS = 5.0  # the builder thread ends after this long without requests
SAME_SEARCH = 0.1  # seconds: the vector and keyword halves of one search count once
LOAD_PAUSE = 1.0  # after making a copy in t seconds, rest as long (half a core at most)
REFUSED_SECONDS = 60.0  # a filter the store made no copy of (too many rows): not asked sooner

Key = frozenset[str]


@dataclass(frozen=True)
class KbCopy:
    """The rows of one KB filter at table version ``covers``; ``marks``: what the store
    needs to tell, at a later version, whether they are still exactly the filter's rows."""

    key: Key
    snapshot: TableSnapshot
    covers: int
    marks: Any = None

    @property
    def nbytes(self) -> int:
        return self.snapshot.nbytes


class KbCopyView(Protocol):
    """The table at one version (``version``), as one pass of the builder sees it."""

    version: int

    def keep(self, copies: dict[Key, KbCopy]) -> dict[Key, KbCopy]:
        """Those copies that still hold exactly their filter's rows, moved to ``version``."""
        ...

    def load(self, key: Key) -> KbCopy | None:
        """A copy of the rows of KBs ``key`` at ``version``; None: the store keeps none
        for that filter (no rows, or too many for a copy)."""
        ...


class KbCopySource(Protocol):
    def version(self) -> int:
        """The table's version, cheaply (read for every check)."""
        ...

    def view(self) -> AbstractContextManager[KbCopyView]:
        """The table at its latest version, for one pass of the builder."""
        ...


class KbCopies:
    """Copies of ``source``'s KB filters within ``budget_bytes``; the table's version is
    read at most every ``check_interval`` seconds (writes of other processes)."""

    def __init__(
        self, source: KbCopySource, budget_bytes: int, check_interval: float = CHECK_INTERVAL
    ) -> None:
        self._source, self._budget, self._interval = source, budget_bytes, check_interval
        self._lock = threading.Lock()
        self._copies: dict[Key, KbCopy] = {}
        self._used: dict[Key, float] = {}  # last search
        self._searches: dict[Key, float] = {}  # searches, halved every HALF_LIFE
        self._refused: dict[Key, float] = {}  # when the store gave no copy
        self._halved = time.monotonic()
        self._current = -1  # the version every copy in _copies covers (-1: unknown)
        self._checked = float("-inf")
        self._writes = 0
        self._cleared = 0
        self._pending: queue.Queue[Key] = queue.Queue(PENDING_BUILDS)
        self._queued: set[Key] = set()
        self._worker: threading.Thread | None = None
        self._refreshing = StoreCalls()  # the worker's reads, waited for at exit
        self._served = self._missed = self._made = 0  # since start, for stats()

    @property
    def enabled(self) -> bool:
        return self._budget > 0

    def stats(self) -> KbCopyStats:
        """Copies held now, and how searches that could use one fared since start."""
        with self._lock:
            held = sum(c.nbytes for c in self._copies.values())
            return KbCopyStats(
                copies=len(self._copies),
                megabytes=round(held / 2**20, 3),
                budget_mb=round(self._budget / 2**20, 1),
                made=self._made,
                searches_from_copies=self._served,
                searches_from_table=self._missed,
            )

    # --- searches -----------------------------------------------------------------
    def current(self, kb_ids: Sequence[str]) -> TableSnapshot | None:
        """The copy of those KBs at the table's latest version, or None (search the other
        way; a copy is made or brought up to date in the background)."""
        key = frozenset(kb_ids)
        with self._lock:
            now = time.monotonic()
            if now - self._refused.get(key, float("-inf")) < REFUSED_SECONDS:
                return None  # no copy of it a minute ago (the whole table, say): not counted
            self._count(key, now)
            found = self._copies.get(key) if self._current >= 0 else None
            due = now - self._checked >= self._interval
            if found is not None and not due:
                self._served += 1
                return found.snapshot
            current = self._current
        if found is not None:  # due: has another process written since?
            if self._source.version() == current:
                with self._lock:
                    self._checked = time.monotonic()
                    self._served += 1
                return found.snapshot
            with self._lock:
                if self._current == current:
                    self._current = -1  # check every copy again
        with self._lock:
            self._missed += 1
            wanted = key in self._copies or self._admits(key)
        if wanted:
            self._request(key)
        return None

    def _count(self, key: Key, now: float) -> None:
        if now - self._halved >= HALF_LIFE:
            self._halved = now
            # Copies keep their counts, however low: at 0 the coldest would admit any KB.
            self._searches = {
                k: n / 2 for k, n in self._searches.items() if n >= 1 or k in self._copies
            }
            self._used = {k: t for k, t in self._used.items() if k in self._searches}
            self._refused = {k: t for k, t in self._refused.items() if now - t < REFUSED_SECONDS}
        # Measured from the last search counted, not the last ask: searches coming faster
        # than SAME_SEARCH apart (a busy server's) would otherwise all count as one.
        if now - self._used.get(key, float("-inf")) >= SAME_SEARCH:
            self._searches[key] = self._searches.get(key, 0.0) + 1
            self._used[key] = now

    def _admits(self, key: Key) -> bool:
        """Make a copy (about a second of work at a million chunks) for a KB searched
        twice; when the budget is full, only for one searched more than twice as often
        as the coldest copy, which it would push out. Searches spread evenly over more
        KBs than fit had copies made for nearly every search, each pushing out another:
        a core busy making copies, and every search 40 % slower (docs/benchmarks/journal.md)."""
        searches = self._searches[key]
        held = sum(c.nbytes for c in self._copies.values())
        largest = max((c.nbytes for c in self._copies.values()), default=0)
        if held + (len(self._queued) + 1) * largest <= self._budget:  # with those on the way
            return searches >= 2
        coldest = min(self._searches.get(k, 0.0) for k in self._copies)
        return searches >= 2 * coldest + 2

    def rows(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        """Rows of those ids found in copies known to be current."""
        with self._lock:
            copies = list(self._copies.values()) if self._current >= 0 else []
        found: dict[str, StoredChunk] = {}
        for copy in copies:
            wanted = [i for i in chunk_ids if i not in found and i in copy.snapshot.keys]
            if wanted:
                found.update(copy.snapshot.get(wanted))
            if len(found) == len(chunk_ids):
                break
        return found

    def changed(self) -> None:
        """This process wrote to the table: no copy is current until checked again."""
        with self._lock:
            self._writes += 1
            self._current = -1
            keys = list(self._copies)
        if keys:
            self._request(keys[0])  # one pass checks every copy

    def clear(self) -> None:
        """The table was dropped: no copy of it may come back."""
        with self._lock:
            self._writes += 1
            self._cleared += 1
            self._copies.clear()
            self._current = -1

    # --- the background thread ------------------------------------------------------
    def _request(self, key: Key) -> None:
        with self._lock:
            if key not in self._queued:
                try:
                    self._pending.put_nowait(key)
                    self._queued.add(key)
                except queue.Full:
                    pass  # dropped: asked again by the next search
            if self._worker is None and not self._pending.empty():
                self._worker = threading.Thread(
                    target=self._work, name="citewell-kb-copies", daemon=True
                )
                self._worker.start()

    def _work(self) -> None:
        """Runs while there are requests; ends (under the lock that ``_request`` starts it
        under, so none is left waiting) IDLE_SECONDS after the last."""
        lower_priority()  # searches have the cores first
        while True:
            try:
                key = self._pending.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._pending.empty():
                        self._worker = None
                        return
                continue
            with self._lock:
                self._queued.discard(key)
            with self._refreshing as allowed:
                if not allowed:  # the process is exiting
                    return
                spent = self._refresh_quietly(key)
            if spent:
                time.sleep(LOAD_PAUSE * spent)

    def _refresh_quietly(self, key: Key) -> float:
        try:
            return self._refresh(key)
        except Exception:  # noqa: BLE001 - a dropped table, a closing process: search the other way
            log.debug("refreshing in-memory KB copies failed", exc_info=True)
            return 0.0

    def _refresh(self, key: Key) -> float:
        """Bring every copy to the latest version (dropping those that changed), then make
        the copy of ``key`` if it is missing; the seconds spent making it. A write of this
        process meanwhile makes it check again from the version it reached, so a copy just
        made is not thrown away by ingestion into other KBs."""
        spent = 0.0
        carried: dict[Key, KbCopy] | None = None
        while True:
            with self._lock:
                writes, cleared = self._writes, self._cleared
                copies = dict(self._copies) if carried is None else carried
            with self._source.view() as view:
                kept = view.keep(copies)
                if key not in kept:
                    began = time.monotonic()
                    made = view.load(key)
                    spent += time.monotonic() - began
                    self._note_made(key, made, kept)
            with self._lock:
                if cleared != self._cleared:
                    return spent
                if writes != self._writes:
                    carried = kept  # exact at ``view.version``: checked again from there
                    continue
                self._copies = self._within_budget(kept)
                self._current, self._checked = view.version, time.monotonic()
                return spent

    def _note_made(self, key: Key, made: KbCopy | None, kept: dict[Key, KbCopy]) -> None:
        with self._lock:
            if made is None:
                self._refused[key] = time.monotonic()
                return
            kept[key] = made
            self._made += 1

    def _within_budget(self, copies: dict[Key, KbCopy]) -> dict[Key, KbCopy]:
        """The most searched (then most recently searched) copies that fit in the budget."""
        order = sorted(
            copies,
            key=lambda k: (self._searches.get(k, 0.0), self._used.get(k, 0.0)),
            reverse=True,
        )
        kept, total = {}, 0
        for key in order:
            size = copies[key].nbytes
            if total + size <= self._budget:
                kept[key] = copies[key]
                total += size
        return kept
