"""benchmarks/ is a reference: each script BENCHMARKS.md cites, run one way; the journal's
probes in benchmarks/lab/; every one still imports; and the tests depend on none of them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELPERS = {"common", "serving"}  # imported by the cited scripts, not cited themselves


def _modules(folder: str) -> list[str]:
    return sorted(p.stem for p in (ROOT / folder).glob("*.py") if p.stem != "__init__")


def test_each_reference_script_is_cited_with_its_command():
    page = (ROOT / "BENCHMARKS.md").read_text()
    for name in set(_modules("benchmarks")) - HELPERS:
        assert f"python -m benchmarks.{name} " in page, name
    assert "cd benchmarks" not in page and "python benchmarks/" not in page


def test_each_probe_in_lab_is_cited_by_the_journal():
    journal = (ROOT / "docs/benchmarks/journal.md").read_text()
    for name in _modules("benchmarks/lab"):
        assert f"benchmarks.lab.{name}" in journal or f"benchmarks/lab/{name}.py" in journal, name


def test_every_benchmark_still_imports():
    names = [f"benchmarks.{n}" for n in _modules("benchmarks")]
    names += [f"benchmarks.lab.{n}" for n in _modules("benchmarks/lab")]
    code = f"import importlib\nfor name in {names!r}:\n    importlib.import_module(name)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_no_test_imports_from_benchmarks():
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("benchmarks"), path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("benchmarks") for a in node.names), path
