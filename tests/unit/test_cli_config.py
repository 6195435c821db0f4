"""`citewell config set|reset`: run-time changes from the command line, as the admin API
makes them (validated, kept in the database, audited)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from citewell.cli import main


def run(data_dir, *args: str):  # noqa: ANN001, ANN201
    return CliRunner().invoke(main, ["--data-dir", str(data_dir), *args], catch_exceptions=False)


def test_set_shows_in_config_and_reset_takes_it_back(tmp_path):
    changed = run(tmp_path, "config", "set", "top_k=3", "rag_template=Notes: {{CONTEXT}} {{QUERY}}")
    assert changed.exit_code == 0, changed.output
    assert "Changed: rag_template, top_k." in changed.output
    shown = json.loads(run(tmp_path, "config").output)
    assert shown["top_k"] == 3 and shown["rag_template"].startswith("Notes:")
    assert "Nothing changed." in run(tmp_path, "config", "set", "top_k=3").output
    assert run(tmp_path, "config", "reset", "top_k").exit_code == 0
    shown = json.loads(run(tmp_path, "config").output)
    assert shown["top_k"] == 8 and shown["rag_template"].startswith("Notes:")
    run(tmp_path, "config", "reset")
    assert json.loads(run(tmp_path, "config").output)["rag_template"] == ""


def test_refusals_say_why_and_change_nothing(tmp_path):
    for args, said in (
        (["top_k=0"], "top_k"),
        (["data_dir=/elsewhere"], "restart"),
        (["contextual_chunks=true"], "need an LLM"),
        (["top_k"], "NAME=VALUE"),
    ):
        result = run(tmp_path, "config", "set", *args)
        assert result.exit_code != 0 and said in result.output, (args, result.output)
    assert json.loads(run(tmp_path, "config").output)["top_k"] == 8


def test_the_reference_is_still_there(tmp_path):
    assert run(tmp_path, "config", "--markdown").output.startswith("# Configuration reference")
