"""A big table's copy kept current by the changes since it (memory/changes.py): it answers
as a copy made anew of the changed table would, and the change journal that names the
changed files (stores/lance/journal.py)."""

import numpy as np
import pyarrow as pa
import pytest

from citewell.stores.lance.journal import ChangeJournal
from citewell.stores.memory.bm25 import KeywordPostings
from citewell.stores.memory.changes import ChangedCopy
from citewell.stores.memory.snapshot import TableChanges, TableSnapshot
from citewell.types import ChunkFilter

DIM = 8
WORDS = ["ferry", "quay", "dawn", "tide", "harbour", "island", "boat", "sail", "net", "gull"]


def rows(spec: list[tuple[str, str, list[str], str]], seed: int) -> pa.Table:
    """(id, file, KBs, terms) rows with random unit vectors."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((len(spec), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    count = len(spec)
    return pa.table({
        "id": [s[0] for s in spec], "file_id": [s[1] for s in spec],
        "kb_ids": [s[2] for s in spec], "idx": pa.array(range(count), pa.int32()),
        "text": [s[3] for s in spec], "start": [0] * count, "end": [1] * count,
        "page": pa.array([None] * count, pa.int32()), "headings": [[] for _ in spec],
        "file_name": ["x.md"] * count, "terms": [s[3] for s in spec], "vector": list(vectors),
    })  # fmt: skip


def corpus(files: int, seed: int = 1) -> list[tuple[str, str, list[str], str]]:
    rng = np.random.default_rng(seed)
    spec = []
    for f in range(files):
        for c in range(4):
            words = " ".join(rng.choice(WORDS, size=6))
            spec.append((f"f{f}-c{c}", f"f{f}", ["a"] if f % 3 else ["a", "b"], words))
    return spec


def test_a_changed_copy_answers_as_a_copy_of_the_changed_table():
    before = corpus(60)
    old_data = rows(before, 2)
    old = TableSnapshot.from_arrow(1, old_data, DIM)
    # f1 rewritten (new words, KB b dropped), f2 deleted, f100 added
    rewritten = [(f"f1-c{c}", "f1", ["a"], "lighthouse keeper") for c in range(3)]
    added = [(f"f100-c{c}", "f100", ["b"], "lighthouse ferry") for c in range(2)]
    changed_data = rows(rewritten + added, 3)
    kept = old_data.filter(_not_in(before, ("f1", "f2")))
    fresh = TableSnapshot.from_arrow(2, pa.concat_tables([kept, changed_data]), DIM)
    changes = TableChanges(
        frozenset({"f1", "f2", "f100"}),
        TableSnapshot.from_arrow(2, changed_data, DIM),
        fresh.count,
    )
    copy = ChangedCopy(old, changes, 2)
    assert copy.adds_up and copy.changed_rows == 5
    for where in (ChunkFilter(), ChunkFilter(kb_ids=("b",)), ChunkFilter(file_ids=("f1", "f5"))):
        for probe in (
            fresh.vectors.take([0])[0],
            fresh.vectors.take([fresh.count - 1])[0],
            old.vectors.take([8])[0],
        ):
            mine, theirs = copy.search(probe, 10, where), fresh.search(probe, 10, where)
            assert [h[0] for h in mine] == [h[0] for h in theirs]
            assert [h[1] for h in mine] == pytest.approx([h[1] for h in theirs])
        for words in (["lighthouse"], ["ferry", "dawn"], ["quay"]):
            mine = copy.keyword_search(words, 10, where)
            theirs = fresh.keyword_search(words, 10, where)
            assert [h[0] for h in mine[:3]] == [h[0] for h in theirs[:3]]
            assert not {h[0] for h in mine} & {"f2-c0", "f2-c1", "f1-c3"}  # gone
    assert set(copy.get(["f1-c0", "f1-c3", "f2-c0", "f3-c0"])) == {"f1-c0", "f3-c0"}
    assert copy.get(["f1-c0"])["f1-c0"].text == "lighthouse keeper"


def _not_in(spec, files):
    return pa.array([s[1] not in files for s in spec])


def test_changed_rows_are_scored_on_the_copy_scale():
    spec = corpus(40)
    whole = KeywordPostings.build(rows(spec, 1)["terms"])
    first = KeywordPostings.build(rows(spec[:100], 1)["terms"])
    rest = KeywordPostings.build(rows(spec[100:], 1)["terms"])
    words = ["ferry", "gull", "gull"]
    given = first.statistics(words)
    assert rest.scores(words, None, given) == pytest.approx(whole.scores(words)[100:], rel=1e-4)


def test_the_journal_names_the_files_written_after_a_version(tmp_path):
    journal = ChangeJournal(tmp_path / "t.changes")
    versions = iter(range(2, 100))
    journal.record(["f1", "f2"], lambda: next(versions))
    journal.record(["f3"], lambda: next(versions))
    _, lines = journal.read(lambda: None)
    assert journal.files_after(1, lines) == {"f1", "f2", "f3"}
    assert journal.files_after(2, lines) == {"f3"}
    assert journal.files_after(3, lines) == set()
    journal.record(None, lambda: next(versions))  # a delete by KB: files not known
    _, lines = journal.read(lambda: None)
    assert journal.files_after(3, lines) is None


def test_a_long_journal_keeps_its_newer_half_and_says_what_it_dropped(tmp_path):
    journal = ChangeJournal(tmp_path / "t.changes", max_bytes=400)
    for version in range(1, 40):
        journal.record([f"file-{version}"], lambda v=version: v)
    _, lines = journal.read(lambda: None)
    assert journal.files_after(1, lines) is None  # too old: the copy is made again
    newest = journal.files_after(37, lines)
    assert newest == {"file-38", "file-39"}
