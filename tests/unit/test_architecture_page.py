"""docs/architecture.md stays true: every file or folder it names exists."""

from __future__ import annotations

import re

from tests.conftest import REPO

PAGE = REPO / "docs" / "architecture.md"


def named_paths(text: str) -> list[str]:
    """Backquoted repository paths (src/…, docs/…, tests/…); bare file names that follow
    a path with a folder (`git.py` after `src/citewell/sources/connectors/folder.py`) count in that
    folder."""
    found, folder = [], ""
    for token in re.findall(r"`([^`\s]+)`", text):
        if token.startswith(("src/", "docs/", "tests/")):
            found.append(token)
            folder = token if token.endswith("/") else token.rsplit("/", 1)[0] + "/"
        elif re.fullmatch(r"[\w-]+\.py", token) and folder.startswith("src/"):
            found.append(folder + token)
    return found


def test_every_path_on_the_architecture_page_exists():
    paths = named_paths(PAGE.read_text())
    assert len(paths) > 40  # the page names the files of its five paths
    missing = [p for p in paths if not (REPO / p).exists()]
    assert missing == [], f"docs/architecture.md names files that do not exist: {missing}"
