"""Parsing and embedding are separate stages: files are parsed several at a time, and files
already parsed are embedded while a slow one is still being read."""

from __future__ import annotations

import threading
import time

import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.ingest.types import ItemEvent
from citewell.sources import text_item
from citewell.testing.fakes import FakeHashEmbedder

pytestmark = pytest.mark.e2e


class SlowReader:
    """Wraps the real reader; 'slow.md' takes until ``release`` is set (or 20 s)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.release = threading.Event()
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def read(self, data: bytes, name: str):
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if name == "slow.md":
                self.release.wait(20)
            else:
                time.sleep(0.05)
            return self.inner.read(data, name)
        finally:
            with self._lock:
                self.in_flight -= 1


@pytest.fixture
def app(settings: Settings) -> Citewell:
    return Citewell.from_settings(
        settings.with_values({"extract_workers": 3}), embedder=FakeHashEmbedder(32)
    )


def test_a_slow_file_does_not_hold_back_the_others(app):
    reader = SlowReader(app.ingestor.reader)
    app.ingestor.reader = reader
    order: list[tuple[str, str]] = []

    def observe(event: ItemEvent) -> None:
        order.append((event.key, event.state))
        others = {f"f{i}.md" for i in range(6)}
        if others <= {k for k, s in order if s == "indexed"}:
            reader.release.set()  # every other file is indexed: let the slow one finish

    items = [text_item("slow.md", "# Slow\n\nA very slow file about herons.")] + [
        text_item(f"f{i}.md", f"# File {i}\n\nA quick note about teal number {i}.")
        for i in range(6)
    ]
    began = time.monotonic()
    report = app.ingestor.ingest(items, "birds", observer=observe)
    assert time.monotonic() - began < 15, "the slow file blocked the others until its timeout"
    assert report.files_indexed == 7 and report.files_failed == 0
    indexed = [k for k, s in order if s == "indexed"]
    assert indexed[-1] == "slow.md" and len(indexed) == 7
    assert reader.most_in_flight >= 2  # parsed side by side
    assert app.search("herons", ["birds"], k=1)[0].chunk.file_name == "slow.md"


def test_identical_files_in_one_run_are_stored_once(app):
    same = "# Same\n\nThe very same words about coots."
    items = [text_item(f"copy-{i}.md", same) for i in range(4)]
    items.append(text_item("other.md", "# Other\n\nSomething else about grebes."))
    report = app.ingestor.ingest(items, "birds")
    assert report.files_indexed == 2 and report.files_linked == 3
    assert len(app.files("birds")) == 2
    paths = sorted(app.catalog.files_in_kb(app.kb_id("birds")))
    assert paths == [*(f"copy-{i}.md" for i in range(4)), "other.md"]


def test_a_parser_failure_fails_only_its_file(app):
    items = [
        text_item("good.md", "# Good\n\nA fine note about swans."),
        text_item("empty.pdf", "not a pdf at all"),
        text_item("fine.md", "# Fine\n\nAnother note about geese."),
    ]
    report = app.ingestor.ingest(items, "birds")
    assert report.files_indexed == 2 and report.files_failed == 1
    assert report.errors[0].startswith("empty.pdf: ")
