"""The index line of `citewell check`: what an operator reads about the vector index."""

from __future__ import annotations

from citewell.cli.server import _index_line
from citewell.stores.base import IndexHealth


def test_a_training_under_way_is_reported_beside_the_index_that_serves():
    health = IndexHealth(
        rows=2_100_000,
        vector_index="IvfSq",
        trained_rows=1_000_000,
        partitions=1000,
        training_rows=2_048_000,
        unindexed_rows=52_000,
    )
    assert _index_line(health) == (
        "chunks: 2,100,000, vector search: IvfSq trained on 1,000,000 rows in 1000"
        " partition(s), 52,000 rows not yet indexed, being trained anew on 2,048,000 rows"
        " in the background"
    )


def test_no_training_no_mention():
    health = IndexHealth(rows=60, vector_index="IvfSq", trained_rows=60, partitions=8)
    assert "trained anew" not in _index_line(health)
