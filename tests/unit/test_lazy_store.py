"""A chunk store opened on its first use: nothing is opened before, once only after, and
``open_now`` opens it ahead (what a long-running command does at start)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, cast

from citewell.stores.base import ChunkStore
from citewell.stores.lazy import open_now, opened_on_first_use


def _table(opened: list[int]) -> ChunkStore:
    """A stand-in for a chunk table: what opening returns."""
    opened.append(1)
    return cast(ChunkStore, SimpleNamespace(dimension=4))


def test_opens_on_first_use_once_and_forwards():
    opened: list[int] = []
    store = opened_on_first_use(lambda: _table(opened))
    assert opened == []
    with ThreadPoolExecutor(4) as pool:
        dimensions = list(pool.map(lambda _: store.dimension, range(8)))
    assert dimensions == [4] * 8 and opened == [1]


def test_open_now_opens_ahead_and_leaves_a_real_store_alone():
    opened: list[int] = []
    store = opened_on_first_use(lambda: _table(opened))
    open_now(store)
    assert opened == [1]
    real = _table([])
    open_now(real)  # already open: nothing happens
    assert cast(Any, real).dimension == 4
