"""``citewell import`` runs at the lowest CPU priority unless told otherwise, so a server
on the same machine answers searches first (benchmarks/import_fairness.py measures it)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from citewell import machine
from citewell.cli import ingest, main


@pytest.mark.parametrize(("args", "lowered"), [((), 1), (("--priority", "normal"), 0)])
def test_the_import_lowers_its_priority_unless_asked_not_to(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: tuple[str, ...], lowered: int
) -> None:
    calls: list[None] = []
    monkeypatch.setattr(ingest, "lower_priority", lambda: calls.append(None))
    missing = str(tmp_path / "none.parquet")  # refused after the priority is set
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "import", missing, *args])
    assert result.exit_code != 0 and "not a file" in result.output
    assert len(calls) == lowered


def test_threads_started_after_it_inherit_the_lowest_priority() -> None:
    """Linux keeps a priority a thread: set in one thread (here not pytest's own), it holds
    for that thread and for the threads it starts (the store's, the import's)."""
    seen: dict[str, int] = {}

    def child() -> None:
        seen["child"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def importer() -> None:
        machine.lower_priority()
        seen["self"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        started = threading.Thread(target=child)
        started.start()
        started.join()

    thread = threading.Thread(target=importer)
    thread.start()
    thread.join()
    assert seen == {"self": 19, "child": 19}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) < 19  # pytest's as it was
