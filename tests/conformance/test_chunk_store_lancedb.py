import pytest

from citewell.stores.lance_upkeep import VectorIndexPolicy
from citewell.stores.lancedb import LanceChunkStore
from citewell.testing.conformance import DIM, ScanConformance

pytestmark = pytest.mark.conformance


class TestLanceChunkStore(ScanConformance):
    @pytest.fixture
    def store(self, tmp_path):
        return LanceChunkStore(tmp_path / "lance", "chunks_test", DIM)


class TestLanceChunkStoreWithAnnIndex(ScanConformance):
    """Same behaviour once the approximate vector index exists."""

    @pytest.fixture
    def store(self, tmp_path):
        return LanceChunkStore(
            tmp_path / "lance", "chunks_test", DIM, VectorIndexPolicy(min_rows=1)
        )


def test_reopening_with_another_dimension_is_refused(tmp_path):
    from citewell.errors import StoreError
    from citewell.testing.conformance import CORPUS

    LanceChunkStore(tmp_path / "lance", "t", DIM).upsert(CORPUS[:1])
    with pytest.raises(StoreError, match="dimensional"):
        LanceChunkStore(tmp_path / "lance", "t", DIM * 2)


def test_data_persists_across_instances(tmp_path):
    from citewell.testing.conformance import ALL, CORPUS

    LanceChunkStore(tmp_path / "lance", "t", DIM).upsert(CORPUS)
    assert LanceChunkStore(tmp_path / "lance", "t", DIM).count(ALL) == len(CORPUS)


def test_drop_removes_the_table(tmp_path):
    from citewell.testing.conformance import ALL, CORPUS

    store = LanceChunkStore(tmp_path / "lance", "t", DIM)
    store.upsert(CORPUS)
    other = LanceChunkStore(tmp_path / "lance", "other", DIM)
    other.upsert(CORPUS[:1])
    store.drop()
    assert LanceChunkStore(tmp_path / "lance", "t", DIM).count(ALL) == 0  # a new, empty table
    assert other.count(ALL) == 1
