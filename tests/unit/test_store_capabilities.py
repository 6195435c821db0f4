"""The ChunkStore protocol is the minimum; scanning, index upkeep and dropping are optional
capabilities the pipeline checks for."""

import pytest

from citewell.errors import StoreError
from citewell.stores.base import (
    ChunkStore,
    DropsTables,
    OptimizesIndexes,
    ScansChunks,
    capabilities,
    drop_store,
    exporting,
    optimize_store,
    report,
    scanning,
)


class MinimalStore:
    """Only what the protocol requires (a backend such as a hosted vector service)."""

    dimension = 8

    def __init__(self) -> None:
        self.calls: list[str] = []

    def upsert(self, chunks):
        return len(chunks)

    def delete(self, where):
        return 0

    def link_files(self, file_ids, kb_id, within=None):
        pass

    def unlink(self, file_id, kb_id):
        pass

    def vector_search(self, vector, k, where):
        return []

    def keyword_search(self, terms, k, where):
        return []

    def get(self, chunk_ids):
        return []

    def count(self, where):
        return 0

    def file_ids(self):
        return set()


def test_a_store_with_only_the_required_methods_is_a_chunk_store():
    store = MinimalStore()
    assert isinstance(store, ChunkStore)
    assert not isinstance(store, ScansChunks | OptimizesIndexes | DropsTables)
    optimize_store(store)  # nothing to fold: no error


def test_one_query_says_what_a_store_can_do_and_how_it_is():
    store = MinimalStore()
    assert not any(vars(capabilities(store)).values())
    now = report(store)
    assert (now.index, now.kb_copies, now.table_copy) == (None, None, None)
    assert not drop_store(store) and exporting(store) is None


def test_copying_into_another_space_says_what_to_do_without_scanning():
    with pytest.raises(StoreError, match="re-ingest the files"):
        scanning(MinimalStore())


def test_both_backends_have_every_capability(tmp_path):
    from citewell.stores.lance.store import LanceChunkStore
    from citewell.stores.postgres.store import PostgresChunkStore

    lance = LanceChunkStore(tmp_path / "lance", "t", 8)
    assert all(vars(capabilities(lance)).values())
    for capability in (ScansChunks, OptimizesIndexes, DropsTables):
        assert isinstance(lance, capability)
        # PostgresChunkStore needs a server to construct; its class has the methods.
        assert all(hasattr(PostgresChunkStore, name) for name in ("scan", "optimize", "drop"))


def test_a_store_that_cannot_count_by_file_is_counted_file_by_file():
    from citewell.stores.base import CountsChunks, chunks_per_file

    class TwoFiles(MinimalStore):
        def file_ids(self):
            return {"f1", "f2"}

        def count(self, where):
            return 3 if where.file_ids == ("f1",) else 1

    store = TwoFiles()
    assert not isinstance(store, CountsChunks)
    assert chunks_per_file(store) == {"f1": 3, "f2": 1}
