"""Training a big table's vector index anew in the background, while writes go on.

Trained under the store's write lock, a retraining stalled every write that came meanwhile,
about a minute at a million chunks. Lance lets an index built on one version of a table
commit after later appends, deletes, updates and other indexes' segments (its conflict rules
for CreateIndex), so the training reads the table as it was when it began and the writes
continue beside it; the rows they add are searched flat until the next vector delta.

Two things would break that commit, and ``TableUpkeep`` holds them back while a training
runs: compacting fragments the new index covers (Lance refuses the commit: their rows moved),
and adding or merging segments of the vector index (the new index replaces the segments it
knew of, so one added meanwhile would stay beside it, placed by the old centroids).

A big training's build runs in a child process at the lowest CPU priority, so that the
searches of the machine's API processes keep their cores (``build_apart``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from citewell.stores.background import Exiting, exiting, wait_at_exit
from citewell.stores.lance.apart import run_apart, stop_children
from citewell.stores.lance.partitions import create_ivf_sq

log = logging.getLogger(__name__)

RETRY_AFTER = 300.0  # seconds before a failed training is tried again
# A background training of at least this many rows runs in a child process at the lowest
# CPU priority: Lance's build takes every core for minutes (15 at 6.3 million rows), and
# the searches of the process serving them, or of the machine's other API processes, come
# first. Smaller trainings take seconds and are not worth a process's start.
APART_FROM_ROWS = 200_000


@dataclass(frozen=True)
class TrainingRun:
    """A training under way: the rows it trains on and the newest fragment its index covers
    (fragments after it were written since, and may be compacted meanwhile)."""

    rows: int
    last_fragment: int
    began: float


class BackgroundTraining:
    """At most one training of a table's vector index at a time, in a thread of its own."""

    def __init__(self, on_trained: Callable[[], None] | None = None) -> None:
        self._on_trained = on_trained
        self._run: TrainingRun | None = None
        self._thread: threading.Thread | None = None
        self._retry_at = 0.0
        self.failure: str | None = None  # why the last training failed, if it did
        wait_at_exit(self)

    @property
    def running(self) -> TrainingRun | None:
        thread, run = self._thread, self._run
        return run if thread is not None and thread.is_alive() else None

    def may_start(self) -> bool:
        return self.running is None and time.monotonic() >= self._retry_at

    def start(self, dataset: Any, build: Callable[[Any, int], None]) -> TrainingRun:
        """Train with ``build(dataset, rows)`` on ``dataset`` (a Lance dataset, which stays at
        the version it was opened at) in a new thread."""
        fragments = [f.fragment_id for f in dataset.get_fragments()]
        run = TrainingRun(dataset.count_rows(), max(fragments, default=-1), time.monotonic())
        self.failure = None
        thread = threading.Thread(
            target=self._train, args=(dataset, build, run), name="citewell-vector-training"
        )
        thread.daemon = True  # a server stopping mid-training trains again when next due
        self._run, self._thread = run, thread
        thread.start()
        return run

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a training under way; returns whether none is running now. At exit a
        build in a child process is stopped instead: it runs again when next due."""
        if exiting.is_set():
            stop_children()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.running is None

    def _train(self, dataset: Any, build: Callable[[Any, int], None], run: TrainingRun) -> None:
        try:
            build(dataset, run.rows)
        except Exiting:
            log.info("A training of the vector index was stopped by the process's exit.")
            return
        except Exception as error:  # noqa: BLE001 - the old index keeps serving
            self._retry_at = time.monotonic() + RETRY_AFTER
            self.failure = str(error)
            log.warning(
                "Training the vector index anew on %d chunks failed (tried again in %.0f s): %s",
                run.rows, RETRY_AFTER, error,
            )  # fmt: skip
            return
        log.info(
            "Trained the vector index anew on %d chunks in %.0f s, beside writes",
            run.rows, time.monotonic() - run.began,
        )  # fmt: skip
        if self._on_trained is not None:
            self._on_trained()


def build_vector_index(
    dataset: Any,
    rows: int,
    options: dict[str, Any],
    background: bool = False,
    busy: threading.Event | None = None,
) -> None:
    """An IVF_SQ index of the vector column with ``options`` on ``dataset`` (``rows`` rows,
    partitions.py): a big one trained in the background in a child process
    (``build_apart``), others here (``busy``: set while other work runs beside)."""
    if background and rows >= APART_FROM_ROWS:
        build_apart(dataset.uri, dataset.version, options)
    else:
        create_ivf_sq(dataset, options, busy)


def build_apart(uri: str, version: int, options: dict[str, Any]) -> None:
    """``create_ivf_sq`` with ``options`` on ``version`` of the dataset at ``uri``, run in
    a child process at the lowest CPU priority (apart.py). Raises what the build raised."""
    run_apart(_create_index, uri, version, options)


def _create_index(uri: str, version: int, options: dict[str, Any]) -> None:
    import lance

    create_ivf_sq(lance.dataset(uri, version=version), options)
