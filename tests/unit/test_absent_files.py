"""What a LanceDB store knows of the files its table has no row of (stores/lance/writes.py,
``AbsentFiles``), without asking the table: an import into a new table skips each batch's
look-up while every version is its own append."""

from __future__ import annotations

import pytest

from citewell.stores.lance.writes import AbsentFiles

pytestmark = pytest.mark.unit


def noted(*batches: set[str]) -> AbsentFiles:
    """Files appended batch by batch into a table seen empty at version 1."""
    absent = AbsentFiles()
    absent.start(1)
    for version, files in enumerate(batches, start=1):
        absent.appended(version, version + 1, files)
    return absent


def test_files_appended_since_the_table_was_empty_are_known_and_others_absent():
    absent = noted({"a", "b"}, {"c"})
    assert absent.holds(3, {"d", "e"})
    assert not absent.holds(3, {"d", "b"})  # b has rows: the write merges by id


def test_a_version_not_its_own_drops_what_was_noted():
    """Another write made version 4: nothing is known of the table any more, and the ids
    noted are let go (a server kept up to the limit's worth after an import)."""
    absent = noted({"a"}, {"b"}, {"c"})
    assert not absent.holds(5, {"z"})
    assert not absent.holds(4, {"z"})  # not even of the version it knew
    absent.appended(4, 5, {"d"})
    assert not absent.holds(5, {"z"})


def test_past_the_limit_the_table_is_asked(monkeypatch):
    monkeypatch.setattr(AbsentFiles, "MAX_FILES", 3)
    absent = noted({"a", "b"})
    assert absent.holds(2, {"c"})
    absent.appended(2, 3, {"c", "d"})  # four files noted: more than it keeps
    assert not absent.holds(3, {"e"})


def test_a_million_files_fit_a_ten_million_chunk_import():
    """A ten-million-chunk import of ten chunks a file appends a million files: past the
    old limit of 500,000 each batch asked the table, about 1 ms a file there."""
    assert AbsentFiles.MAX_FILES >= 1_000_000
    absent = noted({f"{n:032x}" for n in range(1_000_000)})
    assert absent.holds(2, {f"{n:032x}" for n in range(1_000_000, 1_001_638)})
    assert not absent.holds(2, {f"{999_999:032x}"})
