"""The installed package's version: pyproject.toml is the one place it is written."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version


@cache
def package_version() -> str:
    try:
        return version("citewell")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
