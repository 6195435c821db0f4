"""CHANGELOG.md keeps the Keep a Changelog shape, and its newest version is the package's."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def _versions() -> list[tuple[str, list[str]]]:
    """(version heading, the ### headings under it), top to bottom."""
    found: list[tuple[str, list[str]]] = []
    for line in (ROOT / "CHANGELOG.md").read_text().splitlines():
        if line.startswith("## "):
            found.append((line[3:], []))
        elif line.startswith("### "):
            found[-1][1].append(line[4:])
    return found


def test_each_version_lists_each_kind_of_change_once():
    versions = _versions()
    assert versions[0][0] == "[Unreleased]"
    for heading, kinds in versions[1:]:
        assert re.fullmatch(r"\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}", heading), heading
        assert set(kinds) <= KINDS and len(kinds) == len(set(kinds)), (heading, kinds)


def test_the_newest_version_is_the_packages():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    newest = _versions()[1][0]
    assert newest.startswith(f"[{project['version']}]")
