"""In-memory copies of single knowledge bases of a big LanceDB chunk table.

A table at or above the ANN threshold is searched through LanceDB's IVF index. A search
filtered to one small knowledge base of a million-chunk table paid the most for it: 250
probes for recall, 35-45 ms a vector search, and 10 ms to fetch the winning rows from
fragments all over the table, where the same 10,000 chunks alone answer in 2 ms from
memory. So the rows of a KB filter that keeps few rows are kept in memory (vectors, ids,
row text, BM25 postings), searched exactly, within a memory budget, least recently used
out first. Keyword scores in a copy count the KB as the collection (its own document
count, lengths and term frequencies), as Open WebUI's per-collection BM25 does; while a copy
is not current, LanceDB's full-text index finds the candidates and they are scored again
with the same KB statistics (scope_statistics), never the whole table's.

A copy is used only while it is known to hold the table's latest version. Other KBs'
writes must not throw it away (a busy server ingests all the time), so a copy remembers
which fragments hold its rows and their files. Lance never changes a fragment's data in
place (a write adds fragments; a delete or update gives a fragment a new deletion file or
new files; fragment ids are not reused), so at a later version the copy still holds
exactly the filter's rows when its own fragments are unchanged and no fragment added since
holds a row of its KBs. That check reads the manifest and the ``kb_ids`` of new fragments
only; it runs on a background thread, like every build, and searches read LanceDB while a
copy is not (yet) known to be current.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from citewell.stores.base import KbCopyStats
from citewell.stores.memory.keeper import lower_priority
from citewell.stores.memory.snapshot import SNAPSHOT_COLUMNS, TableSnapshot
from citewell.types import StoredChunk

log = logging.getLogger(__name__)

CHECK_INTERVAL = 1.0  # seconds between reads of the table's version (other processes' writes)
PENDING_BUILDS = 4  # KB filters waiting for a copy; more requests are dropped, not queued
HALF_LIFE = 60.0  # seconds: search counts halve this often (how "hot" a KB is)
IDLE_SECONDS = 5.0  # the builder thread ends after this long without requests
SAME_SEARCH = 0.1  # seconds: the vector and keyword halves of one search count once
LOAD_PAUSE = 1.0  # after making a copy in t seconds, rest as long (half a core at most)

Key = frozenset[str]
Stamp = tuple[tuple[str, ...], str]  # a fragment's data files and deletion file


@dataclass(frozen=True)
class KbSnapshot:
    """The rows of one KB filter at table version ``covers``; ``fragments``: the stamps of
    the fragments holding them; ``seen``: every fragment id of the table at ``covers``."""

    key: Key
    snapshot: TableSnapshot
    fragments: dict[int, Stamp]
    seen: frozenset[int]
    covers: int

    @property
    def nbytes(self) -> int:
        return self.snapshot.nbytes


def _stamp(fragment: Any) -> Stamp:
    meta = fragment.metadata
    deletion = meta.deletion_file
    files = tuple(sorted(f.path for f in meta.files))
    return files, "" if deletion is None else repr(deletion)


def _kb_predicate(key: Key) -> str:
    kbs = ", ".join("'" + k.replace("'", "''") + "'" for k in sorted(key))
    return f"array_has_any(kb_ids, [{kbs}])"


class KbSnapshots:
    """``open_dataset()``: the table as a Lance dataset at its latest version;
    ``version()``: the table's version (cheap); ``budget_bytes``: memory for all copies."""

    def __init__(
        self,
        open_dataset: Callable[[], Any],
        version: Callable[[], int],
        dimension: int,
        budget_bytes: int,
        check_interval: float = CHECK_INTERVAL,
    ) -> None:
        self._open, self._version, self._dimension = open_dataset, version, dimension
        self._budget, self._interval = budget_bytes, check_interval
        self._lock = threading.Lock()
        self._copies: dict[Key, KbSnapshot] = {}
        self._used: dict[Key, float] = {}  # last search
        self._searches: dict[Key, float] = {}  # searches, halved every HALF_LIFE
        self._halved = time.monotonic()
        self._current = -1  # the version every copy in _copies covers (-1: unknown)
        self._checked = float("-inf")
        self._writes = 0
        self._cleared = 0
        self._pending: queue.Queue[Key] = queue.Queue(PENDING_BUILDS)
        self._queued: set[Key] = set()
        self._worker: threading.Thread | None = None
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
        """The copy of those KBs at the table's latest version, or None (read LanceDB;
        a copy is made or brought up to date in the background)."""
        key = frozenset(kb_ids)
        with self._lock:
            now = time.monotonic()
            self._count(key, now)
            found = self._copies.get(key) if self._current >= 0 else None
            due = now - self._checked >= self._interval
            if found is not None and not due:
                self._served += 1
                return found.snapshot
            current = self._current
        if found is not None:  # due: has another process written since?
            if self._version() == current:
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
                    target=self._work, name="citewell-kb-snapshots", daemon=True
                )
                self._worker.start()

    def _work(self) -> None:
        """Runs while there are requests; ends (under the lock that ``_request`` starts it
        under, so none is left waiting) IDLE_SECONDS after the last."""
        lower_priority()  # LanceDB's own threads read for it at theirs
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
            try:
                spent = self._refresh(key)
                if spent:
                    time.sleep(LOAD_PAUSE * spent)
            except Exception:  # noqa: BLE001 - a dropped table, a closing process: read LanceDB
                log.debug("refreshing in-memory KB copies failed", exc_info=True)

    def _refresh(self, key: Key) -> float:
        """Bring every copy to the latest version (dropping those that changed), then make
        the copy of ``key`` if it is missing; the seconds spent making it. A write of this
        process meanwhile makes it check again from the version it reached, so a copy just
        made is not thrown away by ingestion into other KBs."""
        spent = 0.0
        carried: dict[Key, KbSnapshot] | None = None
        while True:
            with self._lock:
                writes, cleared = self._writes, self._cleared
                copies = dict(self._copies) if carried is None else carried
            dataset = self._open()
            version = int(dataset.version)
            fragments = {f.fragment_id: f for f in dataset.get_fragments()}
            kept = self._still_current(copies, fragments, version)
            if key not in kept:
                began = time.monotonic()
                made = self._load(key, dataset, fragments, version)
                spent += time.monotonic() - began
                if made is not None:
                    kept[key] = made
                    with self._lock:
                        self._made += 1
            with self._lock:
                if cleared != self._cleared:
                    return spent
                if writes != self._writes:
                    carried = kept  # exact at ``version``: checked again from there
                    continue
                self._copies = self._within_budget(kept)
                self._current, self._checked = version, time.monotonic()
                return spent

    def _still_current(
        self, copies: dict[Key, KbSnapshot], fragments: dict[int, Any], version: int
    ) -> dict[Key, KbSnapshot]:
        kept: dict[Key, KbSnapshot] = {}
        new_kbs: dict[int, set[str]] = {}
        for key, copy in copies.items():
            if copy.covers == version:
                kept[key] = copy
                continue
            if any(
                fid not in fragments or _stamp(fragments[fid]) != stamp
                for fid, stamp in copy.fragments.items()
            ):
                continue  # rows of its own deleted, updated or moved by a compaction
            added = fragments.keys() - copy.seen
            for fid in added - new_kbs.keys():
                column = fragments[fid].to_table(columns=["kb_ids"])["kb_ids"]
                new_kbs[fid] = {kb for kbs in column.to_pylist() for kb in kbs or ()}
            if any(new_kbs[fid] & key for fid in added):
                continue  # rows added to its KBs
            kept[key] = replace(copy, seen=frozenset(fragments), covers=version)
        return kept

    def _load(
        self, key: Key, dataset: Any, fragments: dict[int, Any], version: int
    ) -> KbSnapshot | None:
        data = dataset.to_table(
            columns=SNAPSHOT_COLUMNS, filter=_kb_predicate(key), with_row_address=True
        )
        if data.num_rows == 0:
            return None
        addresses = data["_rowaddr"].to_numpy()
        holding = {int(f) for f in np.unique(addresses >> 32)}
        data = data.drop_columns(["_rowaddr"])
        snapshot = TableSnapshot.from_arrow(version, data, self._dimension)
        stamps = {fid: _stamp(fragments[fid]) for fid in holding}
        return KbSnapshot(key, snapshot, stamps, frozenset(fragments), version)

    def _within_budget(self, copies: dict[Key, KbSnapshot]) -> dict[Key, KbSnapshot]:
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
