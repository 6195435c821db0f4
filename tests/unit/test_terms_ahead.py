"""An import's BM25 terms, made in another process a group ahead of the writes."""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

from citewell.ingest import terms_ahead
from citewell.retrieval.tokenize import terms_string

GROUPS = [["Running dogs"], ["The cats were sleeping", "北京大学"], ["Leaves falling"]]


def texts(group: list[str]) -> list[str]:
    return group


def marked_here(monkeypatch) -> None:
    real = terms_ahead._here
    monkeypatch.setattr(terms_ahead, "_here", lambda t, s: [f"here:{x}" for x in real(t, s)])


def test_one_group_is_made_here_and_starts_no_process(monkeypatch):
    def no_process(stemmer: str) -> None:
        raise AssertionError("a short import started a process")

    monkeypatch.setattr(terms_ahead, "_TermsProcess", no_process)
    made = list(terms_ahead.with_terms_ahead(GROUPS[:1], texts, "english"))
    assert made == [(GROUPS[0], [terms_string("Running dogs")])]


def test_later_groups_are_made_in_another_process_with_the_same_terms(monkeypatch):
    marked_here(monkeypatch)  # the spawned process runs the real function, unmarked
    made = list(terms_ahead.with_terms_ahead(GROUPS, texts, "english"))
    assert [group for group, _ in made] == GROUPS
    assert made[0][1] == [f"here:{terms_string('Running dogs')}"]
    assert [terms for _, terms in made[1:]] == [[terms_string(t) for t in g] for g in GROUPS[1:]]


def test_terms_a_failed_process_did_not_make_are_made_here(monkeypatch, caplog):
    class Broken:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.submitted = 0

        def submit(self, *args: object) -> Future[list[str]]:
            self.submitted += 1
            failed: Future[list[str]] = Future()
            failed.set_exception(BrokenProcessPool("killed"))
            return failed

        def shutdown(self, **kwargs: object) -> None:
            pass

    monkeypatch.setattr(terms_ahead, "ProcessPoolExecutor", Broken)
    marked_here(monkeypatch)
    made = list(terms_ahead.with_terms_ahead(GROUPS, texts, "english"))
    assert all(t.startswith("here:") for _, terms in made for t in terms)
    assert "making them here" in caplog.text


def test_no_groups_no_terms():
    assert list(terms_ahead.with_terms_ahead([], texts, "english")) == []
