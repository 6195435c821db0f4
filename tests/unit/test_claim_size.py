"""How many queued files the job runner claims at once (engine.claim_size)."""

from __future__ import annotations

import pytest

from citewell.engine.claim_size import ClaimSize

pytestmark = pytest.mark.unit


def test_a_claim_takes_batch_files_until_files_were_seen():
    assert ClaimSize(64, 256).files() == 64


def test_claims_grow_while_files_make_few_chunks_and_shrink_back():
    size = ClaimSize(64, 256)
    size.observe(files=64, chunks=128)  # two chunks a file: four times the files
    assert size.files() == 256
    size.observe(files=64, chunks=64 * 40)  # then long files: the estimate follows
    assert size.files() == 64
    size.observe(files=10, chunks=20)
    size.observe(files=10, chunks=20)  # small ones again: growing back, a step at a time
    assert 64 < size.files() < 256


def test_claims_never_go_below_batch_files_nor_past_the_maximum():
    size = ClaimSize(64, 100)
    size.observe(files=50, chunks=0)  # files that made no chunk (empty, or all linked)
    assert size.files() == 100
    size.observe(files=1, chunks=10_000)
    assert size.files() == 64


def test_without_a_maximum_claims_keep_their_size():
    size = ClaimSize(64)
    size.observe(files=64, chunks=64)
    assert size.files() == 64
    assert ClaimSize(64, 16).max_files == 64  # a maximum below batch_files means none


def test_nothing_written_tells_nothing():
    size = ClaimSize(64, 256)
    size.observe(files=0, chunks=0)
    assert size.files() == 64


@pytest.mark.parametrize(
    ("setting", "claimed", "expected"), [(64, 30, 64), (64, 64, 64), (64, 256, 256), (16, 256, 64)]
)
def test_the_slice_grows_in_proportion_with_the_claim(setting, claimed, expected):
    assert ClaimSize(64, 256).slice_files(setting, claimed) == expected
