"""`citewell sync` and `citewell connector` as a user runs them. A command loads what it
uses: a sync that finds nothing changed opens no chunk table and loads no model (the
mechanism behind the command's start; the timings are in BENCHMARKS.md). Connector kinds
come from the sources registry."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

HEAVY = ("lancedb", "onnxruntime", "citewell.answer")


def _sync_loading(data, folder) -> tuple[str, list[str]]:
    """The sync's output and the heavy modules its process loaded."""
    code = (
        "import sys, json\nfrom click.testing import CliRunner\nfrom citewell.cli import main\n"
        f"done = CliRunner().invoke(main, ['--data-dir', {str(data)!r}, 'sync', 'notes', "
        f"{str(folder)!r}])\n"
        "assert done.exit_code == 0, done.output\n"
        "print(json.dumps([done.output, sorted(sys.modules)]))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    output, modules = json.loads(ran.stdout.splitlines()[-1])
    return output, [m for m in modules if m.startswith(HEAVY)]


def test_an_unchanged_sync_opens_no_table_and_loads_no_model(tmp_path):
    folder, data = tmp_path / "notes", tmp_path / "data"
    folder.mkdir()
    for n in range(5):
        (folder / f"n{n}.md").write_text(f"# Note {n}\n\nThe heron {n} nests by the lake.")
    first, loaded = _sync_loading(data, folder)
    assert "5 added" in first and {"lancedb", "onnxruntime"} <= set(loaded)
    again, loaded = _sync_loading(data, folder)
    assert "5 unchanged" in again and loaded == []
    (folder / "n1.md").write_text("# Note 1\n\nThe heron left the lake in autumn.")
    changed, loaded = _sync_loading(data, folder)
    assert "1 updated" in changed and {"lancedb", "onnxruntime"} <= set(loaded)


def test_connector_kinds_come_from_the_sources_registry(tmp_path):
    from click.testing import CliRunner

    from citewell.cli import main

    data = ["--data-dir", str(tmp_path / "data")]
    kinds = CliRunner().invoke(main, [*data, "connector", "kinds"])
    assert kinds.exit_code == 0 and kinds.output.split() == [
        "folder", "git", "webdav", "s3", "website",
    ]  # fmt: skip
    refused = CliRunner().invoke(main, [*data, "sync", "notes", str(tmp_path), "--kind", "url"])
    assert refused.exit_code == 1 and "these can: folder, git, webdav, s3, website" in (
        refused.output
    )
    listed = CliRunner().invoke(main, [*data, "kb", "list"])
    assert "No knowledge bases yet" in listed.output  # the refusal made no KB
