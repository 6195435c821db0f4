"""A command about to exit waits for the vector index training its writes started in the
background: exiting would lose it, and a short ingest would lose it again every time."""

from __future__ import annotations

import threading
from typing import Any

from click.testing import CliRunner

from citewell.cli import ingest as cli_ingest
from citewell.ingest.sentences import SpaceWriter


class TrainingStore:
    """A store with a training under way until ``done`` is set (as LanceChunkStore's)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.timeouts: list[float | None] = []

    def wait_for_training(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        return self.done.wait(timeout)


class PlainStore:
    """A store without background trainings (as PostgreSQL's)."""


def test_the_writer_waits_for_both_tables_and_skips_stores_that_do_not_train():
    chunks, sentences = TrainingStore(), TrainingStore()
    writer = SpaceWriter(chunks, sentences)  # type: ignore[arg-type]
    assert not writer.wait_for_training(0)
    chunks.done.set()
    assert not writer.wait_for_training(0)  # the sentence table's still runs
    sentences.done.set()
    assert writer.wait_for_training(0)
    assert SpaceWriter(PlainStore(), PlainStore()).wait_for_training(0)  # type: ignore[arg-type]


class App:
    def __init__(self, store: TrainingStore) -> None:
        self.writer = SpaceWriter(store, PlainStore())  # type: ignore[arg-type]

    def wait_for_index_training(self, timeout: float | None = None) -> bool:
        return self.writer.wait_for_training(timeout)


def run_wait(app: Any) -> str:
    import click

    @click.command()
    def command() -> None:
        cli_ingest._wait_for_training(app)

    result = CliRunner().invoke(command, catch_exceptions=False)
    assert result.exit_code == 0
    return result.output


def test_ingest_says_it_waits_and_returns_once_the_training_is_done():
    store = TrainingStore()
    threading.Timer(0.2, store.done.set).start()
    output = run_wait(App(store))
    assert "Training the vector index anew" in output and "Ctrl-C stops waiting" in output
    assert store.timeouts == [0, None] and store.done.is_set()


def test_nothing_is_said_when_no_training_runs():
    store = TrainingStore()
    store.done.set()
    assert run_wait(App(store)) == ""
