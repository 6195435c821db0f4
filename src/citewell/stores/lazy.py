"""A chunk store opened on its first use. Commands that never search or write (a sync that
finds nothing changed, ``kb create``) then skip opening the table, and importing LanceDB
with it: a second of a short command's start. The server and the workers open theirs at
start (``EmbeddingSpaces`` with ``switch``), so a store that cannot open fails the start."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

from citewell.stores.base import ChunkStore


class OpenedOnFirstUse:
    """Stands for the store ``open`` makes: every attribute is the opened store's."""

    def __init__(self, open_store: Callable[[], ChunkStore]) -> None:
        self._open = open_store
        self._store: ChunkStore | None = None
        self._lock = threading.Lock()

    @property
    def opened(self) -> ChunkStore:
        if self._store is None:
            with self._lock:  # two threads' first uses open it once
                if self._store is None:
                    self._store = self._open()
        return self._store

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and the like ask for these: not the store's
            raise AttributeError(name)
        return getattr(self.opened, name)


def opened_on_first_use(open_store: Callable[[], ChunkStore]) -> ChunkStore:
    return cast(ChunkStore, OpenedOnFirstUse(open_store))


def open_now(store: ChunkStore) -> None:
    """Open ``store`` now if it waits for its first use (a long-running command)."""
    if isinstance(store, OpenedOnFirstUse):
        store.opened  # noqa: B018 (opening is the point)
