"""An import's pause of full garbage collections, and its undoing."""

from __future__ import annotations

import gc

import pytest

from citewell.ingest.gc_pause import OLDEST_EVERY, fewer_collections


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_within_the_block_the_oldest_generation_waits_and_old_objects_are_frozen(unfrozen):
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (before[0], before[1], max(before[2], OLDEST_EVERY))
        assert gc.get_freeze_count() > 0  # what the process held is left out
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_it_is_undone_when_the_block_raises(unfrozen):
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a bad row")
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, 0)


def test_objects_another_part_froze_stay_frozen(unfrozen):
    gc.freeze()  # as a loaded copy does
    made_after = [[] for _ in range(1000)]  # would be frozen too if the block froze again
    frozen = gc.get_freeze_count()
    # The count is compared with <=, not ==: a frozen object another thread frees leaves it.
    with fewer_collections():
        assert 0 < gc.get_freeze_count() <= frozen
    assert 0 < gc.get_freeze_count() <= frozen
    assert len(made_after) == 1000
