"""What a LanceDB store knows of the files its table has no row of (stores/lance/writes.py,
``AbsentFiles``), without asking the table: an import into a new table skips each batch's
look-up while every version is its own write, and a store that did not see its table empty
scans the table's file ids once its look-ups have cost as much."""

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


def test_writes_that_add_no_files_keep_what_was_noted():
    absent = noted({"a"})
    absent.no_files_added(2, 3)  # a delete of a's rows, an update of KBs, index upkeep
    assert absent.holds(3, {"b"})
    assert not absent.holds(3, {"a"})  # may have no rows left: merged by id, as before
    absent.no_files_added(7, 8)  # not from the version it knew: nothing follows
    assert not absent.holds(8, {"b"})


def test_a_scan_is_due_once_look_ups_took_as_long_as_it_would():
    absent = AbsentFiles()
    rows = 10_000_000  # a scan of its file ids: about 1 s
    assert not absent.scan_due(rows)
    absent.looked_up(0.6)
    assert not absent.scan_due(rows)
    absent.looked_up(0.6)
    assert absent.scan_due(rows)
    assert absent.seed(9, ["a", "b", "a"])  # the scan: each file as often as it is read
    assert not absent.scan_due(rows)
    assert absent.holds(9, {"c"}) and not absent.holds(9, {"c", "a"})
    absent.appended(9, 10, {"c"})
    assert not absent.holds(10, {"c"})


def test_a_scan_of_more_files_than_it_keeps_notes_none(monkeypatch):
    monkeypatch.setattr(AbsentFiles, "MAX_FILES", 2)
    absent = AbsentFiles()
    absent.looked_up(5.0)
    assert not absent.seed(4, iter(["a", "b", "c"]))
    assert not absent.holds(4, {"d"})  # the table is asked
    assert not absent.scan_due(1000)  # and not scanned again until look-ups cost as much
