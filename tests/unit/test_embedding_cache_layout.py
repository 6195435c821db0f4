"""The embedded store's embedding cache keeps 1.5 KB rows in a rowid table (cheaper to write
than the WITHOUT ROWID table of earlier releases); a cache in the old layout is copied into
the new one when it is opened, once, and keeps every vector."""

from __future__ import annotations

import sqlite3
import threading

import numpy as np

from citewell.embedders import EmbeddingCache

OLD_LAYOUT = (
    "CREATE TABLE embeddings (model TEXT NOT NULL, hash TEXT NOT NULL, "
    "vector BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
)


def _table_sql(path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT sql FROM sqlite_master WHERE name = 'embeddings'").fetchone()[0]


def _old_cache(path, rows: int) -> np.ndarray:
    vectors = np.random.default_rng(1).standard_normal((rows, 8)).astype(np.float32)
    with sqlite3.connect(path) as db:
        db.execute(OLD_LAYOUT)
        db.executemany(
            "INSERT INTO embeddings VALUES (?, ?, ?)",
            [("m", f"h{i}", v.tobytes()) for i, v in enumerate(vectors)],
        )
    return vectors


def test_a_new_cache_is_a_rowid_table(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put("m", ["a", "a"], np.ones((2, 4), dtype=np.float32))  # the last of a hash wins
    assert list(cache.get("m", ["a", "b"])) == ["a"]
    cache.close()
    assert "WITHOUT ROWID" not in _table_sql(path) and "UNIQUE" in _table_sql(path)


def test_a_cache_in_the_old_layout_is_copied_once_and_keeps_its_vectors(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    vectors = _old_cache(path, 300)
    cache = EmbeddingCache(path)
    found = cache.get("m", [f"h{i}" for i in range(300)])
    assert len(found) == 300 and np.array_equal(found["h299"], vectors[299])
    assert "WITHOUT ROWID" not in _table_sql(path)
    cache.put("m", ["h0"], np.zeros((1, 8), dtype=np.float32))  # replaced, not duplicated
    assert np.array_equal(cache.get("m", ["h0"])["h0"], np.zeros(8, dtype=np.float32))
    assert sum(len(h) for _, h, _ in cache.export()) == 300
    cache.close()
    again = EmbeddingCache(path)  # opened again: nothing left to copy
    assert len(again.get("m", [f"h{i}" for i in range(300)])) == 300
    again.close()


def test_processes_opening_an_old_cache_together_copy_it_once(tmp_path):
    # Several API workers start at once: one copies inside its write transaction, the
    # others wait for it and then find the new layout (threads here, same locking).
    path = tmp_path / "embeddings.sqlite"
    _old_cache(path, 2000)
    caches: list[EmbeddingCache] = []
    failures: list[BaseException] = []

    def open_cache() -> None:
        try:
            caches.append(EmbeddingCache(path))
        except BaseException as error:  # noqa: BLE001 - reported by the assert below
            failures.append(error)

    threads = [threading.Thread(target=open_cache) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(caches) == 4
    assert all(len(c.get("m", [f"h{i}" for i in range(2000)])) == 2000 for c in caches)
    for cache in caches:
        cache.close()
    with sqlite3.connect(path) as db:
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert names == ["embeddings"]
