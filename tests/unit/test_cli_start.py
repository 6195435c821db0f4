"""The command starts at once: importing it loads click and the CLI's own small modules,
not the engine, the agent, the stores or any model runtime; a command's module is imported
when that command runs (the mechanism; timings are in BENCHMARKS.md)."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from citewell.cli import COMMANDS, main

LOADED = "import sys, json, citewell.cli; print(json.dumps(sorted(sys.modules)))"
HEAVY = ("citewell.engine", "citewell.answer", "citewell.app", "sqlalchemy", "pydantic")
HEAVY += ("numpy", "lancedb", "onnxruntime", "pyarrow", "httpx", "uvicorn", "fastapi")


def _loaded(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))


def test_importing_the_cli_loads_nothing_heavy():
    loaded = _loaded(LOADED)
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert heavy == [], heavy
    outside = {m.split(".")[0] for m in loaded if not m.startswith("_")}
    assert outside - set(sys.stdlib_module_names) == {"citewell", "click"}


def test_version_runs_without_the_engine():
    code = (
        "import sys, json\nfrom click.testing import CliRunner\nfrom citewell.cli import main\n"
        "assert CliRunner().invoke(main, ['--version']).exit_code == 0\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    assert not [m for m in _loaded(code) if m.startswith(("citewell.engine", "citewell.answer"))]


def test_help_imports_every_command_module_and_nothing_heavy():
    # --help imports each command's module for its summary: one module's top-level import
    # of the database or the engine made it take 1.3-2.2 s instead of 0.1.
    helps = [["--help"]] + [[name, "--help"] for name in [*COMMANDS, "search", "ask"]]
    code = (
        "import sys, json\nfrom click.testing import CliRunner\nfrom citewell.cli import main\n"
        f"for args in {helps!r}:\n"
        "    assert CliRunner().invoke(main, args).exit_code == 0, args\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    loaded = _loaded(code)
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert heavy == [], heavy
    assert {"citewell.cli.auth", "citewell.cli.config", "citewell.cli.server"} <= set(loaded)


def test_every_command_is_listed_and_imports():
    listed = CliRunner().invoke(main, ["--help"]).output
    for name in [*COMMANDS, "search", "ask"]:
        assert f"  {name} " in listed, name
        assert main.get_command(None, name) is not None, name  # type: ignore[arg-type]
        assert main.get_command(None, name).name == name  # type: ignore[union-attr]


def test_kb_list_reads_the_database_alone(tmp_path):
    code = (
        "import sys, json\nfrom click.testing import CliRunner\nfrom citewell.cli import main\n"
        f"done = CliRunner().invoke(main, ['--data-dir', {str(tmp_path)!r}, 'kb', 'list'])\n"
        "assert done.exit_code == 0 and 'No knowledge bases yet' in done.output, done.output\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    loaded = _loaded(code)
    engine = ("citewell.engine", "citewell.answer", "citewell.embedders", "lancedb", "onnxruntime")
    assert not [m for m in loaded if m.startswith(engine)]
