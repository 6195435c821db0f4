"""Keeps a small table's in-memory snapshot at the table's latest version, without making
searches wait for it.

Building a snapshot reads the whole table (0.3 s at 10,000 chunks, more near the ANN
threshold). Built inside the search that found it stale, every write stalled all searches
behind one rebuild: a server taking an upload a second answered searches in 0.7 s (the
soak benchmark). Now a stale or missing snapshot makes searches read the table itself
(fresh, some milliseconds slower) while one background thread builds the next snapshot;
writes made meanwhile make it build again before the result is used.

A table at or above the ANN threshold is copied too when ``big_rows`` allows (the
``table_copy_mb`` setting), with its vectors under an IVF index in memory. Such a copy
takes tens of seconds to make at a million chunks, so it is made only once the table has
had no write for ``quiet`` seconds (during ingestion searches read LanceDB, as they did
before), on a thread at the lowest priority that then rests as long as the copy took.
Once made, a big copy outlives writes: the rows of the files written since are read and
searched beside it (memory/changes.py), paced so that steady ingestion costs a bounded
share of a core; it is made again only when those changes are too many or not known. That
reading is short, so a search that finds it under way waits for it (``CATCH_UP_WAIT`` at
most) rather than read the table. A process starting up takes a copy saved by the machine
(``SnapshotSource.saved``) instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from citewell.machine import lower_priority
from citewell.stores.background import Exiting, StoreCalls, exiting
from citewell.stores.base import TableCopyStats
from citewell.stores.index_policy import VectorIndexPolicy
from citewell.stores.memory.changes import MAX_CHANGED_ROWS, ChangedCopy
from citewell.stores.memory.snapshot import CopyPutOff, SnapshotSource, TableSnapshot

log = logging.getLogger(__name__)

CHECK_INTERVAL = 1.0  # seconds between checks for writes by other processes (LanceDB)
RETRY_INTERVAL = 1.0  # after a failed build
QUIET_SECONDS = 20.0  # a big table's copy is made once it has had no write this long
MEMORY_RETRY = 60.0  # seconds before a copy put off for want of memory or disk is tried again
# The most a search waits for the rows written since the big copy to be read beside it
# (tens of milliseconds at a million chunks) rather than go to the table: a hybrid search
# in PostgreSQL at a million chunks takes about a second, so a write reached other
# machines' searches in 1-2.4 s (journal: "Uploads beside the searches"). Bounded by a
# few times the last such read, so a slow one (many changes) costs searches little.
CATCH_UP_WAIT = 0.5
# The most a search waits for the machine's saved copy to be mapped when a process starts
# (about two seconds at ten million chunks) rather than read the table: LanceDB's indexes,
# loaded for a few such searches, stayed in each process (1.4 GB at ten million).
SAVED_COPY_WAIT = 30.0
BIG_ROW_EXTRA = 1536  # a big copy's bytes a row beyond its vectors: text, row fields, postings
MAPPED_ROW_EXTRA = 720  # a mapped copy's beyond its codes: postings, lookups, faiss's ids
STREAMED_BUILD_ROW_BYTES = 640  # half a streamed build's peak a row: vocabulary, faiss, hashes


def copy_row_bytes(dimension: int, shared: bool = False) -> int:
    """A row of a big table's copy, as ``table_copy_mb`` is documented to count it: held
    in memory (also what making any copy takes), or mapped from the machine's files, where
    searches read int8 codes and postings, and text and fine codes only for results."""
    if shared:
        return dimension + dimension // 4 + MAPPED_ROW_EXTRA
    return 5 * dimension + BIG_ROW_EXTRA


def copy_build_row_bytes(dimension: int, shared: bool) -> int:
    """Half what making a copy takes at its peak, a row: a shared copy is written from a
    scan a batch at a time (1.4 GB at a million chunks, measured), one held in a process
    is made whole in memory."""
    return STREAMED_BUILD_ROW_BYTES if shared else copy_row_bytes(dimension)


def copy_needed_mb(rows: int, min_rows: int, dimension: int, shared: bool = False) -> float:
    """About what a copy of a table of ``rows`` takes (0: below the ANN threshold, where
    every table is searched from memory anyway)."""
    if not min_rows or rows < min_rows:
        return 0.0
    return round(rows * copy_row_bytes(dimension, shared) / 2**20, 3)


class SnapshotKeeper:
    """``check_interval``: how often the table's version is read for writes by other
    processes. Reading LanceDB's goes through its event loop, where it would queue behind a
    running full-text query, so at most once a second (this process's own writes are known
    at once, through ``changed``). PostgreSQL's source answers from memory until a
    notification says the version moved (postgres_snapshot): asked before every use (0)."""

    def __init__(
        self,
        source: SnapshotSource,
        max_rows: int,
        check_interval: float = CHECK_INTERVAL,
        big_rows: int = 0,
        big_bytes: int = 0,
        quiet: float = QUIET_SECONDS,
        index: VectorIndexPolicy | None = None,
        memory_free: Callable[[], int | None] | None = None,
        build_row_bytes: int = 0,
    ) -> None:
        """``big_rows``: tables from ``max_rows`` up to this many rows are copied too,
        within ``big_bytes`` (checked once a copy is made: then ``big_rows`` shrinks), their
        vectors under an IVF index laid out by ``index``. ``memory_free``: the machine's
        memory free for use now (None: unknown); a big copy is put off while it is less than
        twice what making it takes a row (``build_row_bytes``; else what the copy takes)."""
        self._source, self._max_rows, self._interval = source, max_rows, check_interval
        self._big_rows, self._big_bytes, self._quiet = big_rows, big_bytes, quiet
        self._row_bytes = build_row_bytes or (big_bytes // big_rows if big_rows else 0)
        self._memory_free = memory_free or (lambda: None)
        self._index = index or VectorIndexPolicy()
        self._lock = threading.Lock()
        self._built = threading.Condition(self._lock)  # a build finished
        self._snapshot: TableSnapshot | ChangedCopy | None = None
        self._base: TableSnapshot | None = None  # the latest big copy made, kept across writes
        self._looked_for_saved = False
        self._mapping_saved = False  # the build under way maps the machine's saved copy
        self._had = False  # a big copy was searched in this process
        self._covers = -1  # table version the snapshot (or "too large: none") stands for
        self._checked = float("-inf")
        self._writes = 0  # this process's writes so far; a build started before one is stale
        self._building = False
        self._reading = StoreCalls()  # the build thread's reads, waited for at exit
        self._retry_at = float("-inf")  # after a failed or put-off build
        # Reading the changes since the copy is paced: as long again as the last reading
        # took, so steady ingestion into a big table costs each process a bounded share of
        # a core (searches wait for it a little, then read the table, as ever while no
        # copy is current).
        self._next_build_at = float("-inf")
        self._catch_up_took: float | None = None  # seconds the last reading of changes took
        self._big_state = "waiting"  # where the big copy stands when none is current

    @classmethod
    def of_table(
        cls,
        source: SnapshotSource,
        max_rows: int,
        budget_mb: int,
        dimension: int,
        shared: bool,
        **options: Any,
    ) -> SnapshotKeeper:
        """A keeper whose big copy gets ``budget_mb`` (``table_copy_mb``), rows counted as
        that setting documents: mapped from the machine's files (``shared``) or held."""
        return cls(
            source, max_rows,
            big_rows=(budget_mb << 20) // copy_row_bytes(dimension, shared),
            big_bytes=budget_mb << 20,
            build_row_bytes=copy_build_row_bytes(dimension, shared),
            **options,
        )  # fmt: skip

    def current(self, wait: bool = True) -> TableSnapshot | ChangedCopy | None:
        """The snapshot of the table's latest version, or None: the table is too large, or
        the snapshot is being brought up to date (read the table meanwhile). With a big
        copy to bring up to date, waits a little for the rows written since it (unless
        not ``wait``: a report of the copy, a readiness probe)."""
        if self._max_rows <= 0:
            return None
        with self._lock:
            now = time.monotonic()
            if now < self._retry_at:
                return None
            if self._building:
                return self._catch_up(wait)
            # Too large for a snapshot: nothing stale can be served, so look again (has it
            # shrunk?) only now and then, not before every use.
            interval = self._interval if self._snapshot is not None else CHECK_INTERVAL
            if self._covers >= 0 and now - self._checked < interval:
                return self._snapshot
        version = self._source.version()  # outside the lock: a query, for PostgreSQL
        with self._lock:
            if self._building:
                return self._catch_up(wait)
            if version == self._covers:  # (a write of ours since set it to -1)
                self._checked = now
                return self._snapshot
            self._start_build()
            return self._catch_up(wait)

    def _catch_up(self, wait: bool) -> TableSnapshot | ChangedCopy | None:
        """(Holding the lock, a build running.) The snapshot it makes, if that is the big
        copy with the few rows written since and done within the wait; else None."""
        if not wait:
            return None  # a report
        if self._base is None:
            if not self._mapping_saved:
                return None  # a whole table to read: no search waits that long
            self._built.wait_for(lambda: not self._mapping_saved, SAVED_COPY_WAIT)
            return None if self._building else self._snapshot
        took = self._catch_up_took
        seconds = CATCH_UP_WAIT if took is None else min(CATCH_UP_WAIT, 3 * took + 0.05)
        # Not past the build's finding the changes unknown: then it makes the copy again.
        self._built.wait_for(lambda: not self._building or self._base is None, seconds)
        return None if self._building else self._snapshot

    def big_copy_stats(
        self, budget_mb: int, needed_mb: float, recall_samples: int = 0
    ) -> TableCopyStats:
        """The copy of a table past the ANN threshold, if one is current (and its recall)."""
        snapshot = self.current(wait=False)
        ann = snapshot.ann if snapshot is not None else None
        if snapshot is None or ann is None:
            state = "not_needed" if not needed_mb else self._big_state
            if state == "waiting" and needed_mb > budget_mb:
                state = "too_big"  # not built yet, and it will not be
            current = snapshot is not None
            starting = state in ("waiting", "copying") and self._base is None and not self._had
            return TableCopyStats(
                budget_mb, needed_mb, current, 0, 0.0, 0, state=state, starting=starting
            )
        recall = ann.recall(recall_samples) if recall_samples else None
        megabytes = round(snapshot.nbytes / 2**20, 3)
        rows, partitions = snapshot.count, ann.partitions
        shared = snapshot.vectors.shared
        changed = snapshot.changed_rows if isinstance(snapshot, ChangedCopy) else 0
        return TableCopyStats(
            budget_mb, needed_mb, True, rows, megabytes, partitions, recall, recall_samples,
            shared=shared, changed_rows=changed,
        )  # fmt: skip

    def changed(self) -> None:
        """This process wrote to the table: the snapshot no longer holds it."""
        with self._lock:
            self._writes += 1
            self._snapshot, self._covers = None, -1

    def dropped(self) -> None:
        """The table is gone: nothing of its copy carries over to one made anew."""
        self._forget_base()
        self.changed()

    def _start_build(self) -> None:
        self._building = True
        self._mapping_saved = (
            self._base is None and not self._looked_for_saved and self._source.kept()
        )
        self._snapshot, self._covers = None, -1
        thread = threading.Thread(target=self._build, name="citewell-snapshot", daemon=True)
        thread.start()

    def _build(self) -> None:
        # Reading the changes is paced (see _next_build_at); a search waiting meanwhile
        # reads the table once its wait is over.
        time.sleep(max(0.0, self._next_build_at - time.monotonic()))
        while True:
            with self._lock:
                writes = self._writes
            with self._reading as allowed:
                if not allowed:  # the process is exiting
                    return
                snapshot, version, spent, retry = self._read(writes)
            with self._lock:
                if writes == self._writes or version < 0:  # no write of ours since it began
                    self._snapshot, self._covers = snapshot, version
                    self._checked = time.monotonic()
                    if version < 0:
                        self._retry_at = self._checked + retry
                    self._building = self._mapping_saved = False
                    self._built.notify_all()
                    return
            time.sleep(spent)  # a big copy made in vain: rest as long before the next

    def _read(self, writes: int) -> tuple[TableSnapshot | ChangedCopy | None, int, float, float]:
        """``_make`` at the table's version now; a failure gives version -1."""
        try:
            snapshot, version, spent, retry = self._make(self._source.version(), writes)
        except Exiting:
            return None, -1, 0.0, RETRY_INTERVAL
        except Exception:  # noqa: BLE001 - a dropped table, a closing process: read the table
            log.debug("building the in-memory snapshot failed", exc_info=True)
            if self._big_state == "copying":  # a minute of work each time: not again
                log.warning("copying a big table into memory failed", exc_info=True)
                self._big_rows, self._big_state = 0, "failed"
            return None, -1, 0.0, RETRY_INTERVAL
        return snapshot, snapshot.version if snapshot is not None else version, spent, retry

    def _make(
        self, version: int, writes: int
    ) -> tuple[TableSnapshot | ChangedCopy | None, int, float, float]:
        """What searches of the table at ``version`` may use: (a snapshot or None, the
        version that stands for, or -1 to try again after the last item's seconds; the
        seconds a big copy took)."""
        rows = self._source.count_rows()
        if rows < self._max_rows:
            self._forget_base()
            return self._source.load(), version, 0.0, RETRY_INTERVAL
        if rows > self._big_rows:
            self._forget_base()
            self._big_state = "too_big"
            return None, version, 0.0, RETRY_INTERVAL
        if self._base is None and not self._looked_for_saved:
            self._looked_for_saved = True  # once: a saved copy is older than any made here
            self._base = self._source.saved(self._index)
            if self._base is None:
                self._forget_base()  # (an unreadable one) searches waiting for it go on
        began = time.monotonic()
        changed = self._with_changes(version)
        if changed is not None:  # the big copy, kept current by the changes since it
            self._had = True
            if isinstance(changed, ChangedCopy):
                spent = time.monotonic() - began
                self._next_build_at = time.monotonic() + spent
                self._catch_up_took = spent
                log.debug("read %d changed rows in %.3f s", changed.changed_rows, spent)
            return changed, version, 0.0, RETRY_INTERVAL
        if not self._quiet_since(version, writes):
            return None, version, 0.0, RETRY_INTERVAL
        if self._memory_short(rows):
            self._big_state = "put_off"
            return None, -1, 0.0, MEMORY_RETRY
        began, self._big_state = time.monotonic(), "copying"
        try:
            self._base = self._load_big(rows)
        except CopyPutOff as reason:
            log.warning("%s", reason)
            self._big_state = "put_off"
            return None, -1, 0.0, MEMORY_RETRY
        self._had = self._had or self._base is not None
        return self._base, version, time.monotonic() - began, RETRY_INTERVAL

    def _with_changes(self, version: int) -> TableSnapshot | ChangedCopy | None:
        """The big copy with the changes since it, at ``version`` or later; None: there
        is none, or the changes are too many or not known (made again)."""
        base = self._base
        if base is None:
            return None
        if base.version == version:
            return base
        changes = self._source.changes(base.version)
        if changes is not None and changes.rows.count <= MAX_CHANGED_ROWS:
            changed = ChangedCopy(base, changes, version)
            if changed.adds_up:
                return changed
            log.warning("the table's copy missed a change: making it again")
        self._forget_base()  # made again once the table is quiet
        return None

    def _forget_base(self) -> None:
        """No big copy to keep current: searches waiting for one stop waiting."""
        with self._lock:
            self._base = None
            self._mapping_saved = False
            self._built.notify_all()

    def _quiet_since(self, version: int, writes: int) -> bool:
        """Wait until the table has had no write (of any process) for ``quiet`` seconds;
        False if one of ours came, or the process began to exit."""
        lower_priority()
        self._big_state = "waiting"
        quiet_from = time.monotonic()
        while time.monotonic() - quiet_from < self._quiet:
            if exiting.wait(min(CHECK_INTERVAL, self._quiet)):
                return False  # the process is exiting: it waits for this thread
            latest = self._source.version()
            with self._lock:
                if self._writes != writes:
                    return False  # ours: _build starts over
            if latest != version:
                version, quiet_from = latest, time.monotonic()
        return True

    def _memory_short(self, rows: int) -> bool:
        """Too little memory free now to make the copy (other programs, an LLM loaded)."""
        free, peak = self._memory_free(), 2 * rows * self._row_bytes
        if free is None or free >= peak:
            return False
        log.info(
            "a copy of the table (%d rows) needs about %d MB while it is made, %d MB are "
            "free: searches read LanceDB; trying again in a minute",
            rows, peak >> 20, free >> 20,
        )  # fmt: skip
        return True

    def _load_big(self, rows: int) -> TableSnapshot | None:
        snapshot = self._source.load(self._index)
        held = snapshot.nbytes
        if held <= self._big_bytes:
            log.info("copied a table of %d rows into memory (%d MB)", rows, held >> 20)
            self._big_state = "waiting"  # what the next write leaves it at
            return snapshot
        with self._lock:  # longer rows than the estimate: admit fewer from now on
            self._big_rows = min(self._big_rows, rows * self._big_bytes // held)
            self._big_state = "too_big"
        log.info("a copy of %d rows took %d MB, over table_copy_mb: not kept", rows, held >> 20)
        return None
